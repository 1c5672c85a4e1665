/*
 * main.c - tabletfs, the FUSE daemon: tabletfs [-f] [-d] [-o OPT,...]
 * STORE MOUNTPOINT (docs/design.md section 2, man/tabletfs.1).
 *
 * Set-up ladder: parse options, fork (unless -f), open the store, create
 * the session, mount, start the control socket, then tell the waiting
 * parent that all went well.
 * Everything that can fail happens before the parent exits, so errors
 * reach the terminal.  The fork comes first because bt_store_open starts
 * threads, which a fork after it would not carry over.  Teardown runs the
 * ladder backwards; bt_store_close flushes the memtables.
 *
 * No pid file of the daemon's own (libbsd's pidfile_open): bt_store_open
 * already takes STORE/LOCK with flock(2) and writes the holder's pid into
 * it after the fork, which is all pidfile_open would do in a second file;
 * an init system can name STORE/LOCK as the pid file (man/tabletfs.1).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/wait.h>
#include <unistd.h>	/* with libbsd's overlay: closefrom, setproctitle */

#include "coord/coord.h"
#include "fs/fs.h"
#include "util/units.h"

enum {
	KEY_RO,
	KEY_ALLOW_OTHER,
};

#define CFG_OPT(t, field) { t, offsetof(struct fs_config, field), 0 }

static const struct fuse_opt config_spec[] = {
	CFG_OPT("sync=%s", sync),
	CFG_OPT("cache_timeout=%s", cache_timeout),
	CFG_OPT("max_cell=%s", max_cell),
	CFG_OPT("memtable_size=%s", memtable_size),
	CFG_OPT("cache_size=%s", cache_size),
	FUSE_OPT_KEY("ro", KEY_RO),
	FUSE_OPT_KEY("allow_other", KEY_ALLOW_OTHER),
	/* What mount(8) and fstab pass that has no meaning here. */
	FUSE_OPT_KEY("defaults", FUSE_OPT_KEY_DISCARD),
	FUSE_OPT_KEY("auto", FUSE_OPT_KEY_DISCARD),
	FUSE_OPT_KEY("noauto", FUSE_OPT_KEY_DISCARD),
	FUSE_OPT_KEY("user", FUSE_OPT_KEY_DISCARD),
	FUSE_OPT_KEY("nouser", FUSE_OPT_KEY_DISCARD),
	FUSE_OPT_KEY("users", FUSE_OPT_KEY_DISCARD),
	FUSE_OPT_KEY("_netdev", FUSE_OPT_KEY_DISCARD),
	FUSE_OPT_KEY("nofail", FUSE_OPT_KEY_DISCARD),
	FUSE_OPT_END
};

static void
usage(FILE *f)
{
	fprintf(f,
	    "usage: tabletfs [-f] [-d] [-s] [-o OPT,...] STORE MOUNTPOINT\n"
	    "\n"
	    "tabletfs options:\n"
	    "    -o ro                  mount read-only\n"
	    "    -o allow_other         let other users in\n"
	    "    -o sync=always         sync the commit log on every write\n"
	    "    -o cache_timeout=SECS  entry and attribute cache (1)\n"
	    "    -o max_cell=BYTES      largest value (64m, at most 255m)\n"
	    "    -o memtable_size=BYTES memory of all memtables (64m)\n"
	    "    -o cache_size=BYTES    block cache (64m)\n"
	    "\n");
}

static int
config_proc(void *data, const char *arg, int key, struct fuse_args *out)
{
	struct fs_config *cfg = data;

	(void)out;
	switch (key) {
	case KEY_RO:
		cfg->read_only = 1;
		return 1;	/* the kernel mount is read-only too */
	case KEY_ALLOW_OTHER:
		cfg->allow_other = 1;
		return 1;	/* for the kernel */
	case FUSE_OPT_KEY_NONOPT:
		if (cfg->store == NULL) {
			if ((cfg->store = strdup(arg)) == NULL)
				return -1;
			return 0;
		}
		return 1;	/* the mount point, for fuse_parse_cmdline */
	default:
		return 1;
	}
}

/* Turn the option strings into store options and daemon settings. */
static int
config_apply(const struct fs_config *cfg, struct bt_options *bo,
    struct fs *fs)
{
	char *end;

	if (cfg->sync != NULL) {
		if (strcmp(cfg->sync, "always") != 0) {
			fprintf(stderr, "tabletfs: sync=%s: expected "
			    "sync=always\n", cfg->sync);
			return -1;
		}
		bo->sync_always = true;
	}
	fs->timeout = 1.0;
	if (cfg->cache_timeout != NULL) {
		errno = 0;
		fs->timeout = strtod(cfg->cache_timeout, &end);
		if (errno != 0 || *end != '\0' || end == cfg->cache_timeout ||
		    fs->timeout < 0) {
			fprintf(stderr, "tabletfs: cache_timeout=%s: not a "
			    "number of seconds\n", cfg->cache_timeout);
			return -1;
		}
	}
	const struct {
		const char *name;
		const char *text;
		uint64_t *out;
	} sizes[] = {
		{ "max_cell", cfg->max_cell, &bo->max_cell },
		{ "memtable_size", cfg->memtable_size, &bo->memtable_size },
		{ "cache_size", cfg->cache_size, &bo->block_cache_size },
	};

	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		if (sizes[i].text != NULL &&
		    parse_size(sizes[i].text, sizes[i].out) < 0) {
			fprintf(stderr, "tabletfs: %s=%s: %s\n", sizes[i].name,
			    sizes[i].text, bt_error_detail());
			return -1;
		}
		/* The API reads 0 as "the default": no silent 64m here. */
		if (sizes[i].text != NULL && *sizes[i].out == 0) {
			fprintf(stderr, "tabletfs: %s=%s: must be above 0\n",
			    sizes[i].name, sizes[i].text);
			return -1;
		}
	}
	bo->read_only = cfg->read_only != 0;
	fs->read_only = bo->read_only;
	fs->allow_other = cfg->allow_other != 0;
	fs->sync_always = bo->sync_always;
	fs->max_cell = bo->max_cell != 0 ? bo->max_cell : BT_DEFAULT_MAX_CELL;
	fs->uid = getuid();
	fs->gid = getgid();
	return 0;
}

/*
 * Fork into the background.  The parent waits on a pipe for the child's
 * verdict (a NUL byte once mounted; end of file if it failed after
 * printing why) and exits 0 or 1 accordingly.  The child gets the pipe.
 * Descriptors above stderr that the caller left open (a pipe a script
 * reads to its end, a file a shell redirected) are closed first: the
 * daemon outlives its caller and would hold them for as long as it runs.
 * Nothing of the daemon's own is open yet (the store opens after this).
 */
static int
daemon_begin(int *verdict_fd)
{
	int p[2], status;
	char verdict;
	pid_t pid;

	closefrom(STDERR_FILENO + 1);
	if (pipe(p) < 0 || (pid = fork()) < 0) {
		perror("tabletfs: fork");
		return -1;
	}
	if (pid > 0) {
		close(p[1]);
		if (read(p[0], &verdict, 1) == 1)
			_exit(verdict == 0 ? 0 : 1);
		waitpid(pid, &status, 0);
		_exit(1);
	}
	close(p[0]);
	setsid();
	*verdict_fd = p[1];
	return 0;
}

/* Detach the mounted child from the terminal and release the parent. */
static void
daemon_ready(int verdict_fd)
{
	int fd;

	if (verdict_fd < 0)
		return;
	if (chdir("/") < 0)
		perror("tabletfs: chdir /");
	if ((fd = open("/dev/null", O_RDWR)) >= 0) {
		dup2(fd, 0);
		dup2(fd, 1);
		dup2(fd, 2);
		if (fd > 2)
			close(fd);
	}
	(void)write(verdict_fd, "", 1);
	close(verdict_fd);
}

/*
 * Refuse a mount point that cannot be mounted on before the store is
 * opened (a log replay can take a while), with the fix where there is
 * one: the mount left behind by a daemon that was killed answers
 * ENOTCONN until it is unmounted.  statvfs asks the filesystem itself,
 * where stat may be answered from the kernel's attribute cache.
 */
static int
mountpoint_check(const char *path)
{
	struct statvfs sv;
	struct stat st;

	if (stat(path, &st) == 0 && statvfs(path, &sv) == 0) {
		if (S_ISDIR(st.st_mode))
			return 0;
		errno = ENOTDIR;
	}
	if (errno == ENOTCONN)
		fprintf(stderr, "tabletfs: %s: %s: the mount of a daemon that "
		    "is gone; unmount it (fusermount3 -u %s) and mount "
		    "again\n", path, strerror(errno), path);
	else
		fprintf(stderr, "tabletfs: %s: %s\n", path, strerror(errno));
	return -1;
}

static void
fs_op_init(void *userdata, struct fuse_conn_info *conn)
{
	struct fs *fs = userdata;

	/* O_TRUNC comes with open, so truncation stays in the handle. */
	if (conn->capable & FUSE_CAP_ATOMIC_O_TRUNC)
		conn->want |= FUSE_CAP_ATOMIC_O_TRUNC;
	conn->want &= ~FUSE_CAP_WRITEBACK_CACHE;
	/* Listings need no handle (fs_list.c), so the kernel may skip
	 * OPENDIR and RELEASEDIR. */
	fs->no_opendir = (conn->capable & FUSE_CAP_NO_OPENDIR_SUPPORT) != 0;
}

/*
 * Space figures are those of the filesystem holding the store: here, or
 * for a cell the serving server's storage, which bt_store_space() asks
 * it for (blocks only: a cell's server counts no inodes for us).
 */
static void
fs_op_statfs(fuse_req_t req, fuse_ino_t ino)
{
	struct fs *fs = fuse_req_userdata(req);
	struct statvfs sv;
	struct bt_space sp;
	int rc;

	(void)ino;
	memset(&sv, 0, sizeof(sv));
	if (!fs->cell && statvfs(fs->store_path, &sv) < 0) {
		fuse_reply_err(req, errno);
		return;
	}
	if (fs->cell) {
		if ((rc = bt_store_space(fs->store, &sp)) < 0) {
			fuse_reply_err(req, fs_errno(rc));
			return;
		}
		sv.f_bsize = sv.f_frsize = sp.block_size ? sp.block_size : 4096;
		sv.f_blocks = sp.total_bytes / sv.f_frsize;
		sv.f_bfree = sp.free_bytes / sv.f_frsize;
		sv.f_bavail = sp.available_bytes / sv.f_frsize;
	}
	sv.f_namemax = 255;
	fuse_reply_statfs(req, &sv);
}

static const struct fuse_lowlevel_ops fs_ops = {
	.init = fs_op_init,
	.lookup = fs_op_lookup,
	.forget = fs_op_forget,
	.forget_multi = fs_op_forget_multi,
	.getattr = fs_op_getattr,
	.setattr = fs_op_setattr,
	.mknod = fs_op_mknod,
	.symlink = fs_op_symlink,
	.link = fs_op_link,
	.mkdir = fs_op_mkdir,
	.unlink = fs_op_unlink,
	.rmdir = fs_op_rmdir,
	.rename = fs_op_rename,
	.open = fs_op_open,
	.create = fs_op_create,
	.read = fs_op_read,
	.write = fs_op_write,
	.flush = fs_op_flush,
	.fsync = fs_op_fsync,
	.release = fs_op_release,
	.opendir = fs_op_opendir,
	.readdir = fs_op_readdir,
	.readdirplus = fs_op_readdirplus,
	.releasedir = fs_op_releasedir,
	.statfs = fs_op_statfs,
};

/*
 * Name the mount after its store, as sshfs names its remote: mount(8) and
 * df show "/path/to/store on /mnt type fuse.tabletfs".  libfuse splits
 * options at commas and reads backslashes as escapes, so both are escaped.
 */
static int
fsname_add(struct fuse_args *args, const char *store)
{
	static const char prefix[] = "-ofsname=";
	size_t n = strlen(store);
	char *opt, *q;
	int rc;

	if ((opt = malloc(sizeof(prefix) + 2 * n)) == NULL)
		return -1;
	q = stpcpy(opt, prefix);
	for (const char *p = store; *p != '\0'; p++) {
		if (*p == ',' || *p == '\\')
			*q++ = '\\';
		*q++ = *p;
	}
	*q = '\0';
	rc = fuse_opt_add_arg(args, opt) < 0 ||
	    fuse_opt_add_arg(args, "-osubtype=tabletfs") < 0 ? -1 : 0;
	free(opt);
	return rc;
}

int
main(int argc, char *argv[], char *envp[])
{
	struct fuse_args args = FUSE_ARGS_INIT(argc, argv);
	struct fuse_cmdline_opts opts;
	struct fuse_loop_config loop;
	struct fs_config cfg;
	struct bt_options bo;
	struct fuse_session *se;
	char *store = NULL;
	int rc, verdict_fd = -1, status = 1;
	struct fs fs;

	/*
	 * libbsd's setproctitle writes over argv and the environment, which
	 * this moves aside first; the build links no libbsd-ctor to do it.
	 * fuse_opt_parse below copies the arguments it keeps.
	 */
	setproctitle_init(argc, argv, envp);
	memset(&cfg, 0, sizeof(cfg));
	memset(&opts, 0, sizeof(opts));
	memset(&bo, 0, sizeof(bo));
	memset(&fs, 0, sizeof(fs));
	if (fuse_opt_parse(&args, &cfg, config_spec, config_proc) < 0)
		goto out_args;
	/*
	 * The kernel checks every request against the owners and modes the
	 * daemon presents (fs_access.c): the tables' and families'.  Always,
	 * so that the mounting user meets the same modes as everyone else
	 * does with allow_other.
	 */
	if (fuse_opt_add_arg(&args, "-odefault_permissions") < 0)
		goto out_args;
	if (fuse_parse_cmdline(&args, &opts) != 0)
		goto out_args;
	if (opts.show_help) {
		usage(stdout);
		fuse_cmdline_help();
		fuse_lowlevel_help();
		status = 0;
		goto out_args;
	}
	if (opts.show_version) {
		printf("tabletfs %s, FUSE library %s\n", PACKAGE_VERSION,
		    fuse_pkgversion());
		status = 0;
		goto out_args;
	}
	if (cfg.store == NULL || opts.mountpoint == NULL) {
		usage(stderr);
		goto out_args;
	}
	if (mountpoint_check(opts.mountpoint) < 0)
		goto out_args;
	fs.cell = coord_address_is_cell(cfg.store);
	if (fs.cell)
		store = strdup(cfg.store);
	else
		store = realpath(cfg.store, NULL);
	if (store == NULL) {
		fprintf(stderr, "tabletfs: %s: %s\n", cfg.store,
		    strerror(errno));
		goto out_args;
	}
	fs.store_path = store;
	if (fsname_add(&args, store) < 0)
		goto out_args;
	if (config_apply(&cfg, &bo, &fs) < 0)
		goto out_args;
	if (!opts.foreground && daemon_begin(&verdict_fd) < 0)
		goto out_args;

	if ((rc = bt_store_open(store, &bo, &fs.store)) < 0) {
		fprintf(stderr, "tabletfs: %s: %s%s%s\n", store,
		    bt_strerror(rc), *bt_error_detail() ? ": " : "",
		    bt_error_detail());
		goto out_args;
	}
	if ((rc = fs_init(&fs)) < 0) {
		fprintf(stderr, "tabletfs: %s\n", bt_strerror(rc));
		goto out_store;
	}
	if ((rc = temp_set_new(&fs.temps)) < 0 ||
	    (rc = fs_listings_new(&fs)) < 0) {
		fprintf(stderr, "tabletfs: %s\n", bt_strerror(rc));
		goto out_fs;
	}
	if ((se = fuse_session_new(&args, &fs_ops, sizeof(fs_ops),
	    &fs)) == NULL)
		goto out_fs;
	fs.se = se;
	if (fuse_set_signal_handlers(se) != 0)
		goto out_session;
	if (fuse_session_mount(se, opts.mountpoint) != 0)
		goto out_signals;
	/* tabletctl reaches a cell itself, not through the mount. */
	if (!fs.cell && (rc = fs_socket_start(&fs)) < 0) {
		fprintf(stderr, "tabletfs: %s/tabletfs.sock: %s\n", store,
		    bt_strerror(rc));
		goto out_unmount;
	}
	/* ps shows "tabletfs: STORE on MOUNT": which store a daemon serves. */
	setproctitle("%s on %s", store, opts.mountpoint);
	daemon_ready(verdict_fd);
	verdict_fd = -1;

	/* Until fusermount3 -u, umount or a signal. */
	if (opts.singlethread) {
		rc = fuse_session_loop(se);
	} else {
		loop.clone_fd = opts.clone_fd;
		/* UINT_MAX means unset: libfuse's default of 10. */
		loop.max_idle_threads = opts.max_idle_threads != UINT_MAX ?
		    opts.max_idle_threads : 10;
		rc = fuse_session_loop_mt(se, &loop);
	}
	status = rc < 0 ? 1 : 0;	/* a positive rc is the signal that ended it */

	fs_socket_stop(&fs);
out_unmount:
	fuse_session_unmount(se);
out_signals:
	fuse_remove_signal_handlers(se);
out_session:
	fuse_session_destroy(se);
out_fs:
	fs_listings_free(&fs);	/* their node references first */
	temp_set_free(fs.temps);
	fs_release(&fs);
out_store:
	if ((rc = bt_store_close(fs.store)) < 0) {
		fprintf(stderr, "tabletfs: closing %s: %s\n", store,
		    bt_strerror(rc));
		status = 1;
	}
out_args:
	free(store);
	free(opts.mountpoint);
	free(cfg.store);
	free(cfg.sync);
	free(cfg.cache_timeout);
	free(cfg.max_cell);
	free(cfg.memtable_size);
	free(cfg.cache_size);
	fuse_opt_free_args(&args);
	return status;
}
