#!/usr/bin/env python3
# tests/cluster/linearizable.py - checks that a history of single-row
# operations (histclient.c's JSON lines) is linearizable, row by row
# (linearizability is compositional: a history is linearizable when the
# history of each object is).  Each row is searched with the algorithm of
# Wing and Gong, with Lowe's memoization of (ops linearized, state)
# (Lowe, "Testing for linearizability", 2017; porcupine and Knossos do
# the same).
#
# The model of a row is one register: its newest value, or None before
# any write.  put V sets it; read returns it (None: not found); cas E W
# sets W and reports true iff it equals E, else reports false; incr
# treats it as a decimal integer (None: 0), adds one and returns the sum.
# An op whose outcome is `fail` did not happen and is dropped; one whose
# outcome is `unknown` may take effect at any time after its invoke, or
# never: its completion is +infinity and its result is not checked.
#
# Usage: linearizable.py [--counter ROW --final N] [--keep FILE] HISTORY...
# --final N is the counter's value read after every client stopped
# (absent: "none"): it must lie between the acknowledged increments and
# those plus the unknown ones, and no two acknowledged increments may
# return the same value.  On a violation FILE receives the smallest
# failing row's history, sorted by invoke.  Exits 0 when linearizable,
# 1 on a violation, 2 on bad input.
import argparse
import json
import sys

INF = float("inf")


def step(state, op):
    """The model: (allowed, new state) of op applied to state."""
    kind, unknown = op["op"], op["outcome"] == "unknown"
    if kind == "put":
        return True, op["value"]
    if kind == "read":
        return op["result"] == state, state
    if kind == "cas":
        matched = state == op["expected"]
        if not unknown and op["result"] != matched:
            return False, state
        return True, op["value"] if matched else state
    if kind == "incr":
        try:
            new = int(state or "0") + 1
        except ValueError:
            return False, state
        if not unknown and op["result"] != new:
            return False, state
        return True, "%d\n" % new
    raise ValueError("unknown op %r" % kind)


class Entry:
    __slots__ = ("op", "index", "is_call", "match", "prev", "next")

    def __init__(self, op, index, is_call):
        self.op, self.index, self.is_call = op, index, is_call
        self.match = self.prev = self.next = None


def entries_build(ops):
    """A doubly linked list of call and return events, by time; a call
    sorts before a return of the same time (they may overlap)."""
    events = []
    for i, op in enumerate(ops):
        call, ret = Entry(op, i, True), Entry(op, i, False)
        call.match = ret
        done = INF if op["outcome"] == "unknown" else op["complete"]
        events.append((op["invoke"], 0, call))
        events.append((done, 1, ret))
    events.sort(key=lambda e: (e[0], e[1]))
    head = Entry(None, -1, False)
    prev = head
    for _, _, e in events:
        prev.next, e.prev = e, prev
        prev = e
    return head


def lift(e):
    e.prev.next = e.next
    if e.next is not None:
        e.next.prev = e.prev
    m = e.match
    m.prev.next = m.next
    if m.next is not None:
        m.next.prev = m.prev


def unlift(e):
    m = e.match
    m.prev.next = m
    if m.next is not None:
        m.next.prev = m
    e.prev.next = e
    if e.next is not None:
        e.next.prev = e


def interchangeable_waits(e):
    """Whether e is an unknown increment behind another one not yet
    linearized: the two have the same effect and no result or
    completion to meet, so trying only the first loses nothing (and
    saves trying every subset of them)."""
    if e.op["op"] != "incr" or e.op["outcome"] != "unknown":
        return False
    p = e.prev
    while p.op is not None:
        if p.is_call and p.op["op"] == "incr" and \
                p.op["outcome"] == "unknown":
            return True
        p = p.prev
    return False


class OpSet:
    """The set of ops linearized, by index (in invoke order, so that it
    is mostly a prefix): base, the first index not in it, and a bitset
    of those above.  Keeps the memo's keys small in long histories."""
    __slots__ = ("base", "rest")

    def __init__(self):
        self.base, self.rest = 0, 0

    def key(self, add):
        """The set with op add in it, as a hashable value."""
        base, rest = self.base, self.rest | (1 << (add - self.base))
        low = (~rest & (rest + 1)).bit_length() - 1
        return base + low, rest >> low

    def set(self, key):
        self.base, self.rest = key

    def remove(self, i):
        if i >= self.base:
            self.rest &= ~(1 << (i - self.base))
        else:
            # base - i ops from i on were all in; i no longer is.
            n = self.base - i
            self.rest = (self.rest << n) | ((1 << n) - 2)
            self.base = i


def row_check(ops):
    """None when one row's ops (fail ones dropped) are linearizable;
    otherwise the op that the deepest attempt could not place before it
    had to complete, and how many ops were placed before it."""
    ops = sorted(ops, key=lambda o: o["invoke"])
    head = entries_build(ops)
    state, linearized = None, OpSet()
    cache, stack = set(), []
    stuck, deepest = None, -1
    e = head.next
    while head.next is not None:
        if e.is_call:
            if interchangeable_waits(e):
                e = e.next
                continue
            ok, new = step(state, e.op)
            bits = linearized.key(e.index)
            if ok and (bits, new) not in cache:
                cache.add((bits, new))
                stack.append((e, state))
                state = new
                linearized.set(bits)
                lift(e)
                e = head.next
                continue
            e = e.next
        else:
            # The return of an op not linearized yet: undo the last one.
            if len(stack) > deepest:
                stuck, deepest = e.op, len(stack)
            if not stack:
                return stuck, deepest
            e, state = stack.pop()
            linearized.remove(e.index)
            unlift(e)
            e = e.next
    return None


def history_read(paths):
    ops = []
    for path in paths:
        with open(path) as f:
            for n, line in enumerate(f, 1):
                line = line.strip()
                if not line:
                    continue
                try:
                    op = json.loads(line)
                except ValueError:
                    # The last line of a client killed mid-write.
                    print("%s:%d: not JSON, skipped" % (path, n),
                          file=sys.stderr)
                    continue
                if op["outcome"] not in ("ok", "fail", "unknown"):
                    raise ValueError("%s:%d: outcome %r" %
                                     (path, n, op["outcome"]))
                ops.append(op)
    return ops


def counter_check(ops, row, final):
    """Problems with the counter row, without search."""
    problems = []
    incr = [o for o in ops if o["row"] == row and o["op"] == "incr"]
    acked = [o["result"] for o in incr if o["outcome"] == "ok"]
    unknown = sum(1 for o in incr if o["outcome"] == "unknown")
    seen = set()
    for v in acked:
        if v in seen:
            problems.append("two acknowledged increments returned %d" % v)
        seen.add(v)
    if final is not None:
        if not len(acked) <= final <= len(acked) + unknown:
            problems.append("final counter %d outside [%d acknowledged, "
                            "%d with the unknown]" %
                            (final, len(acked), len(acked) + unknown))
        if acked and max(acked) > final:
            problems.append("an increment returned %d, above the final %d"
                            % (max(acked), final))
    return problems, len(acked), unknown


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--counter")
    ap.add_argument("--final")
    ap.add_argument("--keep")
    ap.add_argument("history", nargs="+")
    args = ap.parse_args()
    try:
        ops = history_read(args.history)
    except (OSError, ValueError, KeyError) as e:
        print("linearizable: %s" % e, file=sys.stderr)
        return 2
    counts = {"ok": 0, "fail": 0, "unknown": 0}
    rows = {}
    for op in ops:
        counts[op["outcome"]] += 1
        if op["outcome"] != "fail" and not (
                op["op"] == "read" and op["outcome"] == "unknown"):
            rows.setdefault(op["row"], []).append(op)
    print("history: %d ops (%d ok, %d fail, %d unknown) in %d rows" %
          (len(ops), counts["ok"], counts["fail"], counts["unknown"],
           len(rows)))
    notok = {}
    for op in ops:
        if op["outcome"] != "ok":
            k = "%s %s" % (op["op"], op["outcome"])
            notok[k] = notok.get(k, 0) + 1
    if notok:
        print("not acknowledged: " + ", ".join("%s %d" % (k, notok[k])
                                     for k in sorted(notok)))
    problems = []
    if args.counter:
        final = None if args.final in (None, "none") else int(args.final)
        cp, acked, unknown = counter_check(ops, args.counter, final)
        print("counter %s: final %s, %d acknowledged increments, %d "
              "unknown" % (args.counter, args.final, acked, unknown))
        problems += cp
    bad = []
    for row in sorted(rows):
        failed = row_check(rows[row])
        if failed is not None:
            bad.append(row)
            problems.append("row %s: not linearizable (%d ops); at best "
                            "%d placed, then no place for %s" %
                            (row, len(rows[row]), failed[1],
                             json.dumps(failed[0], sort_keys=True)))
    for p in problems:
        print("VIOLATION: " + p)
    if args.counter and problems and not bad:
        bad = [args.counter]
    if bad and args.keep:
        row = min(bad, key=lambda r: len(rows.get(r, ())))
        with open(args.keep, "w") as f:
            for op in sorted(rows.get(row, ()), key=lambda o: o["invoke"]):
                f.write(json.dumps(op, sort_keys=True) + "\n")
        print("kept row %s's history in %s" % (row, args.keep))
    if problems:
        return 1
    print("linearizable: %d ops in %d rows" %
          (sum(len(r) for r in rows.values()), len(rows)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
