/* Life cycle of the tracer: start from the configuration, the recording switch, the trace
 * file API, and the stop at exit. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "internal.h"

uint32_t vmst__recording;
bool vmst__started;
static pthread_mutex_t life_lock = PTHREAD_MUTEX_INITIALIZER;
static bool atexit_done;
static bool control_on;

static void at_exit(void)
{
	vmst_shutdown();
}

/* fork(): the child has none of the parent's threads (no writer, no control socket) and a
 * copy of the parent's buffers, whose events are the parent's to write. Around the fork the
 * registry and the buffer list are held so that the child's copies are consistent; in the
 * child the tracer is stopped, the copied buffers are dropped (so that a vmst_init in the
 * child writes only its own events, each thread under its own tid in a new buffer), and the
 * inherited descriptors are closed without touching the parent's files. */
static void before_fork(void)
{
	vmst_events_fork_lock(true);
	pthread_mutex_lock(&vmst__bufs_lock);
}

static void after_fork_parent(void)
{
	pthread_mutex_unlock(&vmst__bufs_lock);
	vmst_events_fork_lock(false);
}

static void after_fork_child(void)
{
	__atomic_store_n(&vmst__recording, 0, __ATOMIC_RELAXED);
	vmst_events_after_fork();
	vmst_writer_after_fork();
	vmst_buffers_after_fork();
	vmst_control_after_fork();
	control_on = false;
	__atomic_store_n(&vmst__started, false, __ATOMIC_RELAXED);
	pthread_mutex_init(&life_lock, NULL);
}

int vmst_init(const char *config)
{
	pthread_mutex_lock(&life_lock);
	if (__atomic_load_n(&vmst__started, __ATOMIC_ACQUIRE)) {
		pthread_mutex_unlock(&life_lock);
		return 0;
	}
	struct vmst_config cfg;
	int rc = vmst_config_parse(config ? config : getenv("VMSCOPE_TRACE"), &cfg);
	if (rc) {
		pthread_mutex_unlock(&life_lock);
		return rc;
	}
	__atomic_store_n(&vmst__buf_size, cfg.bufsize, __ATOMIC_RELAXED);
	__atomic_store_n(&vmst__buf_nsub, cfg.subbufs, __ATOMIC_RELAXED);
	vmst_buffers_init_key();
	vmst_clock_setup(cfg.clock, &vmst__clockinfo);
	char defdir[64];
	snprintf(defdir, sizeof defdir, "vmstrace-%d", (int)getpid());
	rc = vmst_writer_start(cfg.dir ? cfg.dir : defdir, cfg.period_ms);
	if (rc) {
		fprintf(stderr, "vmstrace: cannot start the trace in %s: %s\n",
			cfg.dir ? cfg.dir : defdir, strerror(-rc));
		vmst_config_free(&cfg);
		pthread_mutex_unlock(&life_lock);
		return rc;
	}
	vmst_events_apply(cfg.pat, cfg.npat);
	__atomic_store_n(&vmst__started, true, __ATOMIC_RELEASE);
	__atomic_store_n(&vmst__recording, 1, __ATOMIC_RELEASE);
	vmst_events_refresh();
	if (!atexit_done) {
		atexit(at_exit);
		pthread_atfork(before_fork, after_fork_parent, after_fork_child);
		atexit_done = true;
	}
	if (cfg.socket) {
		int crc = vmst_control_start(cfg.socket);
		if (crc)
			fprintf(stderr, "vmstrace: control socket %s: %s\n", cfg.socket,
				strerror(-crc));
		else
			control_on = true;
	}
	vmst_config_free(&cfg);
	pthread_mutex_unlock(&life_lock);
	return 0;
}

void vmst_shutdown(void)
{
	pthread_mutex_lock(&life_lock);
	if (!__atomic_load_n(&vmst__started, __ATOMIC_ACQUIRE)) {
		pthread_mutex_unlock(&life_lock);
		return;
	}
	if (control_on) {
		vmst_control_stop();
		control_on = false;
	}
	__atomic_store_n(&vmst__recording, 0, __ATOMIC_RELEASE);
	vmst_events_refresh();
	vmst_writer_stop();
	__atomic_store_n(&vmst__started, false, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&life_lock);
}

int vmst_file_enable(bool on)
{
	if (!__atomic_load_n(&vmst__started, __ATOMIC_ACQUIRE))
		return -ESRCH;
	__atomic_store_n(&vmst__recording, on ? 1 : 0, __ATOMIC_RELEASE);
	vmst_events_refresh();
	return 0;
}

bool vmst_file_enabled(void)
{
	return __atomic_load_n(&vmst__recording, __ATOMIC_ACQUIRE) != 0;
}

int vmst_flush(void)
{
	if (!__atomic_load_n(&vmst__started, __ATOMIC_ACQUIRE))
		return -ESRCH;
	return vmst_writer_flush();
}

int vmst_file_set(const char *dir)
{
	if (!dir || !*dir)
		return -EINVAL;
	if (!__atomic_load_n(&vmst__started, __ATOMIC_ACQUIRE))
		return -ESRCH;
	return vmst_writer_set_dir(dir);
}

const char *vmst_file_get(void)
{
	return vmst_writer_dir();
}

void vmst_debug_pause_writer(bool pause)
{
	__atomic_store_n(&vmst__writer_paused, pause ? 1 : 0, __ATOMIC_RELEASE);
	if (!pause)
		vmst_writer_kick();
}
