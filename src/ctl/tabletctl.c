/*
 * tabletctl.c - the administration tool of docs/design.md section 3, with
 * Cloud Bigtable's cbt verbs: `tabletctl [-s STORE] VERB ARGS...`.  This
 * file holds main: when a daemon has the store mounted the command goes to
 * it over the control socket (ctl_socket.h), else ctl_run opens the store
 * here.  The output is the same either way.  See tabletctl(1).
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "ctl/ctl.h"
#include "ctl/ctl_socket.h"

#ifndef PACKAGE_VERSION
#define PACKAGE_VERSION "unknown"
#endif

/*
 * Connect to STORE/tabletfs.sock: the descriptor, or -1 when no daemon
 * listens there (no socket, a stale one, a path too long), and the store
 * is to be opened directly.
 */
static int
socket_connect(const char *store)
{
	struct sockaddr_un sa;
	int fd, n;

	memset(&sa, 0, sizeof(sa));
	sa.sun_family = AF_UNIX;
	n = snprintf(sa.sun_path, sizeof(sa.sun_path), "%s/%s", store,
	    CTL_SOCKET_NAME);
	if (n < 0 || (size_t)n >= sizeof(sa.sun_path))
		return -1;
	if ((fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0)) < 0)
		return -1;
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		close(fd);
		return -1;
	}
	return fd;
}

/* All of standard input, for import T - (at most CTL_SOCKET_MAX_STDIN). */
static int
stdin_slurp(char **out, size_t *len)
{
	size_t cap = 65536, n = 0, r;
	char *p = ctl_xrealloc(NULL, cap, 1);

	while ((r = fread(p + n, 1, cap - n, stdin)) > 0) {
		n += r;
		if (n > CTL_SOCKET_MAX_STDIN) {
			free(p);
			return -EFBIG;
		}
		if (n == cap) {
			cap *= 2;
			p = ctl_xrealloc(p, cap, 1);
		}
	}
	if (ferror(stdin)) {
		free(p);
		return errno ? -errno : -EIO;
	}
	*out = p;
	*len = n;
	return 0;
}

/*
 * Send argv (the verb and its arguments) to the daemon on fd and print
 * its answer; the command's exit status.
 */
static int
socket_run(int fd, const char *store, int argc, char **argv)
{
	char **words, *in = NULL, *out = NULL, *err = NULL, *abs = NULL;
	char cwd[PATH_MAX];
	size_t in_len = 0, out_len, err_len;
	int rc, status = CTL_FAIL;

	words = ctl_xcalloc((size_t)argc + 1, sizeof(*words));
	words[0] = (char *)store;
	memcpy(words + 1, argv, (size_t)argc * sizeof(*argv));
	if (strcmp(argv[0], "import") == 0 && argc == 3) {
		if (strcmp(argv[2], "-") == 0) {
			if ((rc = stdin_slurp(&in, &in_len)) < 0) {
				fprintf(stderr, "tabletctl: import: stdin: "
				    "%s\n", rc == -EFBIG ? "more than 256M "
				    "for the control socket" : strerror(-rc));
				goto out;
			}
		} else if (argv[2][0] != '/' &&
		    getcwd(cwd, sizeof(cwd)) != NULL) {
			/* The daemon's working directory is /. */
			abs = ctl_xcalloc(strlen(cwd) + strlen(argv[2]) + 2, 1);
			sprintf(abs, "%s/%s", cwd, argv[2]);
			words[3] = abs;
		}
	}
	if ((rc = ctl_socket_send_request(fd, argc + 1, words, in,
	    in_len)) < 0 ||
	    (rc = ctl_socket_read_response(fd, &status, &out, &out_len, &err,
	    &err_len)) < 0) {
		fprintf(stderr, "tabletctl: %s: %s/%s: %s\n", argv[0], store,
		    CTL_SOCKET_NAME, rc == -EPROTO ? "the daemon did not "
		    "answer" : strerror(-rc));
		status = CTL_FAIL;
		goto out;
	}
	fwrite(out, 1, out_len, stdout);
	fwrite(err, 1, err_len, stderr);
	if (fflush(stdout) != 0 || ferror(stdout)) {
		fprintf(stderr, "tabletctl: %s: stdout: %s\n", argv[0],
		    strerror(errno ? errno : EIO));
		status = CTL_FAIL;
	}
out:
	free(out);
	free(err);
	free(in);
	free(abs);
	free(words);
	return status;
}

int
main(int argc, char **argv)
{
	const char *store = getenv("TABLETFS_STORE");
	char *help[] = { "help", NULL };
	int ch, fd, status;

	while ((ch = getopt(argc, argv, "+hs:V")) != -1) {
		switch (ch) {
		case 'h':
			return ctl_run(NULL, store, 1, help, stdin, stdout,
			    stderr, NULL);
		case 's':
			store = optarg;
			break;
		case 'V':
			printf("tabletctl %s\n", PACKAGE_VERSION);
			return CTL_OK;
		default:
			return ctl_run(NULL, store, 0, NULL, stdin, stdout,
			    stderr, NULL);
		}
	}
	argc -= optind;
	argv += optind;

	/* help is answered here, every other command by a daemon if any. */
	if (argc > 0 && argc <= CTL_SOCKET_MAX_ARGC - 1 &&
	    strcmp(argv[0], "help") != 0 && store != NULL &&
	    store[0] != '\0' && (fd = socket_connect(store)) >= 0) {
		status = socket_run(fd, store, argc, argv);
		close(fd);
		return status;
	}
	return ctl_run(NULL, store, argc, argv, stdin, stdout, stderr, NULL);
}
