/*
 * main.c - tabletd, the processes of a cell (man/tabletd.8):
 *
 *	tabletd master CELL [--session-timeout MS] [--spread] [--daemon]
 *	    [--pidfile F] [--log-time]
 *	tabletd server CELL [--listen HOST:PORT] [--session-timeout MS]
 *	                    [--daemon] [--pidfile F] [--log-time]
 *
 * Each runs in the foreground, logging one line per event on stderr
 * (with --log-time, after its own clock's time: the order of events
 * across hosts, tests/cluster), until SIGTERM or SIGINT; --daemon
 * detaches it once it is set up far enough to have reported a bad
 * argument.  The pid file is libbsd's pidfile_open(), locked for the
 * process's life.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <libutil.h>	/* libbsd's overlay: pidfile_open */
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "coord/coord.h"
#include "tabletd/tabletd.h"

static volatile sig_atomic_t stop_flag;
static const char *role_name = "tabletd";
static bool log_time;

void
tabletd_log(const char *fmt, ...)
{
	struct timespec now;
	char line[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	if (log_time) {
		/* Taken after formatting: a line never precedes its event. */
		clock_gettime(CLOCK_REALTIME, &now);
		fprintf(stderr, "%lld tabletd %s[%ld]: %s\n",
		    (long long)now.tv_sec * 1000 + now.tv_nsec / 1000000,
		    role_name, (long)getpid(), line);
	} else
		fprintf(stderr, "tabletd %s[%ld]: %s\n", role_name,
		    (long)getpid(), line);
}

static void
on_stop(int sig)
{
	stop_flag = 1;
}

/* Into the background: a new session, standard input and output on
 * /dev/null (a caller reading them, such as $(...) in a shell, is not
 * held), standard error kept for the log lines. */
static int
detach(void)
{
	int fd;

	if (daemon(0, 1) < 0)
		return -1;
	if ((fd = open("/dev/null", O_RDWR)) < 0)
		return -1;
	dup2(fd, STDIN_FILENO);
	dup2(fd, STDOUT_FILENO);
	if (fd > STDERR_FILENO)
		close(fd);
	return 0;
}

static void
usage(FILE *f)
{
	fprintf(f,
	    "usage: tabletd master CELL [options]\n"
	    "       tabletd server CELL [--listen HOST:PORT] [options]\n"
	    "CELL is zk://HOST:PORT[,HOST:PORT...]/NAME\n"
	    "options:\n"
	    "    --listen HOST:PORT      server: where to answer (127.0.0.1:0)\n"
	    "    --session-timeout MS    ZooKeeper session (%d)\n"
	    "    --spread                master: serve tablets on every server\n"
	    "    --balance-by-count      master: move tablets to even out their\n"
	    "                            counts alone, not by load\n"
	    "    --daemon                run in the background\n"
	    "    --pidfile FILE          write and lock a pid file\n"
	    "    --log-time              begin log lines with the time (ms)\n",
	    TABLETD_SESSION_MS);
}

int
main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "listen", required_argument, NULL, 'l' },
		{ "session-timeout", required_argument, NULL, 't' },
		{ "spread", no_argument, NULL, 's' },
		{ "balance-by-count", no_argument, NULL, 'b' },
		{ "daemon", no_argument, NULL, 'd' },
		{ "pidfile", required_argument, NULL, 'p' },
		{ "log-time", no_argument, NULL, 'L' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 }
	};
	struct tabletd_options o = { .listen = "127.0.0.1:0",
	    .session_ms = TABLETD_SESSION_MS, .stop = &stop_flag };
	const char *pidpath = NULL;
	struct pidfh *pfh = NULL;
	bool daemonize = false;
	struct sigaction sa;
	char *end;
	int ch, status;

	while ((ch = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		switch (ch) {
		case 'l':
			o.listen = optarg;
			break;
		case 't':
			o.session_ms = (int)strtol(optarg, &end, 10);
			if (*end != '\0' || o.session_ms < 100) {
				fprintf(stderr, "tabletd: bad session "
				    "timeout: %s\n", optarg);
				return 2;
			}
			break;
		case 'd':
			daemonize = true;
			break;
		case 's':
			o.spread = true;
			break;
		case 'b':
			o.balance_by_count = true;
			break;
		case 'p':
			pidpath = optarg;
			break;
		case 'L':
			log_time = true;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (argc - optind != 2 || (strcmp(argv[optind], "master") != 0 &&
	    strcmp(argv[optind], "server") != 0)) {
		usage(stderr);
		return 2;
	}
	role_name = argv[optind];
	o.cell = argv[optind + 1];
	if (!coord_address_is_cell(o.cell)) {
		fprintf(stderr, "tabletd: %s is not a cell address "
		    "(zk://HOST:PORT/NAME)\n", o.cell);
		return 2;
	}
	if (pidpath != NULL &&
	    (pfh = pidfile_open(pidpath, 0644, NULL)) == NULL) {
		fprintf(stderr, "tabletd: pid file %s: %s\n", pidpath,
		    strerror(errno));
		return 1;
	}
	/* Before any thread starts: a fork keeps only the caller's. */
	if (daemonize && detach() < 0) {
		fprintf(stderr, "tabletd: daemon: %s\n", strerror(errno));
		pidfile_remove(pfh);
		return 1;
	}
	if (pfh != NULL)
		pidfile_write(pfh);
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_stop;
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
	if (strcmp(role_name, "master") == 0)
		status = tabletd_master_run(&o);
	else
		status = tabletd_server_run(&o);
	tabletd_log("exiting");
	pidfile_remove(pfh);
	return status;
}
