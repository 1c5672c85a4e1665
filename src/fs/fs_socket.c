/*
 * fs_socket.c - the daemon's end of the control socket (ctl_socket.h):
 * STORE/tabletfs.sock, served by one thread that runs each tabletctl
 * command on the daemon's open store with ctl_run, one at a time.
 *
 * Without -o allow_other the socket is mode 0600 and serves the daemon's
 * uid alone; with it, 0666 and every uid, each command checked against
 * the tables' and families' modes with the peer's uid, gid and
 * supplementary groups (SO_PEERCRED and SO_PEERGROUPS; ctl_access.c).
 */
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/un.h>
#include <unistd.h>

#include "ctl/ctl.h"
#include "ctl/ctl_socket.h"
#include "fs/fs.h"

#define SOCKET_TIMEOUT_SECS	5
/* Supplementary groups of a peer, at most (Linux allows 65536; more
 * than this are not counted: access they alone would give is refused). */
#define SOCKET_MAX_GROUPS	256

struct fs_socket {
	struct fs *fs;
	int fd;			/* listening */
	char *path;
	pthread_t thread;
};

static void
socket_refuse(int fd)
{
	(void)ctl_socket_send_response(fd, CTL_FAIL, "", 0,
	    CTL_SOCKET_MALFORMED, strlen(CTL_SOCKET_MALFORMED));
}

/*
 * The supplementary groups of the peer on fd into groups (room for max),
 * as the kernel recorded them when it connected (SO_PEERGROUPS: a pid's
 * /proc entry could by now be another process's); the count, 0 when they
 * cannot be had (the peer then has its own gid alone).
 */
static size_t
peer_groups(int fd, uint32_t *groups, size_t max)
{
	gid_t list[SOCKET_MAX_GROUPS];
	socklen_t len = sizeof(list);
	size_t n;

	if (getsockopt(fd, SOL_SOCKET, SO_PEERGROUPS, list, &len) < 0)
		return 0;	/* ERANGE: more than we count */
	n = len / sizeof(gid_t);
	for (size_t i = 0; i < n && i < max; i++)
		groups[i] = (uint32_t)list[i];
	return n < max ? n : max;
}

/* Run the command a request carries and send its output back. */
static void
socket_serve(struct fs_socket *s, int fd)
{
	struct ctl_request req;
	struct ucred cred;
	struct bt_cred who;
	uint32_t groups[SOCKET_MAX_GROUPS];
	socklen_t len = sizeof(cred);
	struct timeval tv = { SOCKET_TIMEOUT_SECS, 0 };
	char *out = NULL, *err = NULL;
	size_t out_len = 0, err_len = 0;
	FILE *in, *outf, *errf;
	int status;

	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) < 0 ||
	    (!s->fs->allow_other && cred.uid != geteuid())) {
		socket_refuse(fd);
		return;
	}
	(void)setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	(void)setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	if (ctl_socket_read_request(fd, &req) < 0) {
		socket_refuse(fd);
		return;
	}
	/* fmemopen wants a size above zero. */
	in = fmemopen(req.in_len > 0 ? req.in : (uint8_t *)"",
	    req.in_len > 0 ? req.in_len : 1, "r");
	outf = open_memstream(&out, &out_len);
	errf = open_memstream(&err, &err_len);
	if (in == NULL || outf == NULL || errf == NULL) {
		status = -1;
		goto out;
	}
	if (req.in_len == 0)
		(void)fgetc(in);	/* at its end: empty */
	who.uid = (uint32_t)cred.uid;
	who.gid = (uint32_t)cred.gid;
	who.groups = groups;
	who.group_count = peer_groups(fd, groups, SOCKET_MAX_GROUPS);
	status = ctl_run(s->fs->store, req.argv[0], req.argc - 1,
	    req.argv + 1, in, outf, errf, &who);
	/* Whatever it changed, the kernel lists afresh (fs_cache.c), and
	 * asks again for attributes that a chmod or chown changed. */
	fs_listings_changed(s->fs);
	if (req.argc > 1 && (strcmp(req.argv[1], "chmod") == 0 ||
	    strcmp(req.argv[1], "chown") == 0))
		fs_access_changed(s->fs, NULL);
out:
	if (in != NULL)
		fclose(in);
	if (outf != NULL)
		fclose(outf);
	if (errf != NULL)
		fclose(errf);
	if (status < 0) {
		free(err);
		err = NULL;
		if (asprintf(&err, "tabletctl: %s\n", strerror(ENOMEM)) < 0)
			err = NULL;
		status = CTL_FAIL;
		out_len = 0;
	}
	(void)ctl_socket_send_response(fd, status, out != NULL ? out : "",
	    out != NULL ? out_len : 0, err != NULL ? err : "",
	    err != NULL ? strlen(err) : 0);
	free(out);
	free(err);
	ctl_request_release(&req);
}

static void *
socket_main(void *arg)
{
	struct fs_socket *s = arg;
	int fd;

	for (;;) {
		if ((fd = accept4(s->fd, NULL, NULL, SOCK_CLOEXEC)) < 0) {
			if (errno == EINTR || errno == ECONNABORTED ||
			    errno == EMFILE || errno == ENFILE ||
			    errno == ENOBUFS || errno == ENOMEM)
				continue;
			break;	/* shut down by fs_socket_stop */
		}
		socket_serve(s, fd);
		close(fd);
	}
	return NULL;
}

int
fs_socket_start(struct fs *fs)
{
	struct sockaddr_un sa;
	struct fs_socket *s;
	sigset_t all, old;
	mode_t mask;
	int rc, n;

	if ((s = calloc(1, sizeof(*s))) == NULL)
		return -ENOMEM;
	s->fs = fs;
	memset(&sa, 0, sizeof(sa));
	sa.sun_family = AF_UNIX;
	n = snprintf(sa.sun_path, sizeof(sa.sun_path), "%s/%s",
	    fs->store_path, CTL_SOCKET_NAME);
	if (n < 0 || (size_t)n >= sizeof(sa.sun_path)) {
		rc = -ENAMETOOLONG;
		goto out;
	}
	if ((s->path = strdup(sa.sun_path)) == NULL) {
		rc = -ENOMEM;
		goto out;
	}
	if ((s->fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0)) < 0) {
		rc = -errno;
		goto out_path;
	}
	/* The store is locked: a socket file here is a dead daemon's. */
	if (unlink(s->path) < 0 && errno != ENOENT) {
		rc = -errno;
		goto out_fd;
	}
	mask = umask(077);
	rc = bind(s->fd, (struct sockaddr *)&sa, sizeof(sa));
	umask(mask);
	if (rc < 0 || chmod(s->path, fs->allow_other ? 0666 : 0600) < 0 ||
	    listen(s->fd, 16) < 0) {
		rc = -errno;
		goto out_unlink;
	}
	/* Signals belong to the FUSE loop, not to this thread. */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	rc = -pthread_create(&s->thread, NULL, socket_main, s);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (rc < 0)
		goto out_unlink;
	fs->sock = s;
	return 0;
out_unlink:
	unlink(s->path);
out_fd:
	close(s->fd);
out_path:
	free(s->path);
out:
	free(s);
	return rc;
}

void
fs_socket_stop(struct fs *fs)
{
	struct fs_socket *s = fs->sock;

	if (s == NULL)
		return;
	unlink(s->path);
	shutdown(s->fd, SHUT_RDWR);
	pthread_join(s->thread, NULL);
	close(s->fd);
	free(s->path);
	free(s);
	fs->sock = NULL;
}
