#!/bin/sh
# The API suites of test_cell_api.sh again, on a cell whose master
# spreads the tablets over its three servers (tabletd master --spread):
# tablets move while the suites run, and splits, merges, flushes,
# compactions and schema changes reach servers other than the root's.
# test_api_bulk is left out there (a bulk load still goes whole to the
# root's server); test_api_usage runs, each server counting the tablets
# it serves.
CELL_START_ARGS=--spread
CELL_API_SPREAD=1
. "$(dirname "$0")/test_cell_api.sh"
