/* The machine model on hand-written metadata and events: untraced guests named after their
 * VMM process (pid-N) or lone thread (tid-N), GUEST option links and names, TIME_SHIFT
 * clocks, user mappings, name collisions. Expected values follow from the rules in
 * include/vmscope/model.h and docs/vm-analysis.md §1-2, applied by hand to the input. */
#include "an_test.h"

static void observe(struct vms_model *m, struct vms_event e)
{
	vms_model_observe(m, &e);
}

static struct vms_event thread_name(uint32_t machine, int32_t tid, int32_t pid, const char *comm)
{
	struct vms_event e = mk(machine, 0, -1, VMS_K_THREAD_NAME, (uint64_t)tid, (uint64_t)pid, 0);
	e.s[0] = comm;
	return e;
}

/* A model with one host source of 4 CPUs, times in ns (hm must outlive the model). */
static struct vms_model *host_model(struct vms_trace_meta *hm, const char *path)
{
	*hm = (struct vms_trace_meta){0};
	hm->nr_cpus = 4;
	hm->ts_in_ns = true;
	struct vms_error err = {0};
	struct vms_model *m = vms_model_new();
	assert_int_equal(vms_model_add_source(m, 0, path, hm, NULL, &err), 0);
	return m;
}

/* Host threads 100 and 101 of process 99 run vCPUs 0 and 1; thread 300 (forked into
 * process 298) runs vCPU 0 of another VM; thread 200 has no known process. Threads 400
 * ("CPU 0/KVM", vcpu 0) and 401 (unnamed, vcpu 1) have no known process either, but the
 * same tid - vcpu_id (400): one QEMU-like VM. Thread 402 runs vcpu 0 but is named
 * "CPU 5/KVM": not that pattern, alone. Nobody claims them: untraced guests pid-99
 * (2 vCPUs), pid-298, then the groups without a pid by tid - vcpu_id: tid-200,
 * tid-400 (2 vCPUs), tid-402. */
static void test_untraced(void **state)
{
	(void)state;
	struct vms_trace_meta hm;
	struct vms_error err = {0};
	struct vms_model *m = host_model(&hm, "some/dir/host.dat");
	observe(m, thread_name(0, 100, 99, "CPU 0/KVM"));
	observe(m, thread_name(0, 101, 99, "CPU 1/KVM"));
	struct vms_event fork = mk(0, 0, 1, VMS_K_PROCESS_FORK, 1, 300, 298);
	fork.s[0] = "qemu";
	observe(m, fork);
	observe(m, mk(0, 1, 101, VMS_K_KVM_ENTRY, 1, 0, 0));
	observe(m, mk(0, 0, 100, VMS_K_KVM_ENTRY, 0, 0, 0));
	observe(m, mk(0, 2, 200, VMS_K_KVM_ENTRY, 0, 0, 0));
	observe(m, mk(0, 3, 300, VMS_K_KVM_ENTRY, 0, 0, 0));
	observe(m, thread_name(0, 400, 0, "CPU 0/KVM"));
	observe(m, thread_name(0, 402, 0, "CPU 5/KVM"));
	observe(m, mk(0, 1, 401, VMS_K_KVM_ENTRY, 1, 0, 0));
	observe(m, mk(0, 1, 400, VMS_K_KVM_ENTRY, 0, 0, 0));
	observe(m, mk(0, 1, 402, VMS_K_KVM_ENTRY, 0, 0, 0));
	assert_int_equal(vms_model_finish(m, &err), 0);
	assert_int_equal(vms_model_nr_machines(m), 6);
	const struct vms_machine *h = vms_model_machine_c(m, 0);
	assert_string_equal(h->name, "host");
	assert_int_equal(h->role, VMS_ROLE_HOST);
	assert_string_equal(vms_role_name(h->role), "host");
	static const char *names[] = {"pid-99", "pid-298", "tid-200", "tid-400", "tid-402"};
	static const int32_t pids[] = {99, 298, -1, -1, -1};
	static const uint32_t nvcpus[] = {2, 1, 1, 2, 1};
	for (uint32_t i = 1; i < 6; i++) {
		const struct vms_machine *g = vms_model_machine_c(m, i);
		assert_string_equal(g->name, names[i - 1]);
		assert_int_equal(g->role, VMS_ROLE_GUEST);
		assert_int_equal(g->source, -1);
		assert_int_equal(g->host, 0);
		assert_int_equal(g->host_pid, pids[i - 1]);
		assert_int_equal(g->host_how, VMS_LINK_KVM_ENTRY);
		assert_int_equal(g->nr_vcpus, nvcpus[i - 1]);
		assert_int_equal(g->sync.method, VMS_SYNC_REFERENCE); /* shares its host's time */
	}
	const struct vms_machine *g = vms_model_machine_c(m, 1);
	assert_int_equal(g->nr_vcpus, 2);
	assert_int_equal(g->vcpus[0].host_tid, 100);
	assert_int_equal(g->vcpus[1].host_tid, 101);
	assert_int_equal(g->vcpus[1].how, VMS_LINK_KVM_ENTRY);
	uint32_t gm, vc;
	assert_int_equal(vms_model_vcpu_of(m, 0, 101, &gm, &vc), 0);
	assert_int_equal(gm, 1);
	assert_int_equal(vc, 1);
	assert_int_equal(vms_model_vcpu_of(m, 0, 200, &gm, &vc), 0);
	assert_int_equal(gm, 3);
	assert_int_equal(vc, 0);
	assert_int_equal(vms_model_vcpu_of(m, 0, 401, &gm, &vc), 0);
	assert_int_equal(gm, 4);
	assert_int_equal(vc, 1);
	assert_int_equal(vms_model_machine_c(m, 4)->vcpus[0].host_tid, 400);
	const struct vms_thread_info *ti = vms_model_thread(m, 0, 100);
	assert_non_null(ti);
	assert_int_equal(ti->pid, 99);
	assert_int_equal(ti->pid_how, VMS_PID_STATEDUMP);
	assert_int_equal(vms_model_machine_c(m, 2)->host_pid_how, VMS_PID_FORK); /* pid-298 */
	assert_int_equal(vms_model_machine_c(m, 3)->host_pid_how, VMS_PID_NONE);
	assert_string_equal(ti->comm, "CPU 0/KVM");
	assert_null(vms_model_thread(m, 0, 12345));
	vms_model_free(m);
}

/* A trace-cmd pair: the host's GUEST option names trace id 0xabc (guest "vm1", vCPUs 0,1 on
 * threads 500, 501); the guest file has that TRACEID and a TIME_SHIFT naming the host's
 * 0x111 (2 samples on its one CPU). kvm_entry of 500 says vcpu 0 too (the option wins and
 * decides); thread 777 is nobody's: untraced "tid-777". */
static void test_guest_option_timeshift(void **state)
{
	(void)state;
	struct vms_guest_map gmap = {0};
	uint32_t vcpu[2] = {0, 1};
	int32_t tid[2] = {500, 501};
	gmap.name = (char *)"vm1";
	gmap.trace_id = 0xabc;
	gmap.nr_vcpus = 2;
	gmap.vcpu = vcpu;
	gmap.host_tid = tid;
	struct vms_trace_meta hm = {0}, gmeta = {0};
	hm.nr_cpus = 2;
	hm.has_trace_id = true;
	hm.trace_id = 0x111;
	hm.nr_guests = 1;
	hm.guests = &gmap;
	uint64_t t[2] = {0, 1000}, sc[2] = {1, 1}, fr[2] = {0, 0};
	int64_t off[2] = {5, 5};
	struct vms_timeshift_cpu tc = {.n = 2, .time = t, .offset = off, .scaling = sc, .frac = fr};
	struct vms_timeshift ts = {.peer_trace_id = 0x111, .flags = 0, .nr_cpus = 1, .cpu = &tc};
	gmeta.nr_cpus = 2;
	gmeta.has_trace_id = true;
	gmeta.trace_id = 0xabc;
	gmeta.timeshift = &ts;
	struct vms_error err = {0};
	struct vms_model *m = vms_model_new();
	assert_int_equal(vms_model_add_source(m, 0, "h.dat", &hm, NULL, &err), 0);
	assert_int_equal(vms_model_add_source(m, 1, "g.dat", &gmeta, NULL, &err), 0);
	observe(m, mk(0, 0, 500, VMS_K_KVM_ENTRY, 0, 0, 0));
	observe(m, mk(0, 1, 777, VMS_K_KVM_ENTRY, 0, 0, 0));
	assert_int_equal(vms_model_finish(m, &err), 0);
	assert_int_equal(vms_model_nr_machines(m), 3);
	const struct vms_machine *g = vms_model_machine_c(m, 1);
	assert_string_equal(g->name, "vm1");
	assert_int_equal(g->role, VMS_ROLE_GUEST);
	assert_int_equal(g->host, 0);
	assert_int_equal(g->host_how, VMS_LINK_GUEST_OPTION);
	assert_int_equal(g->nr_vcpus, 2);
	assert_int_equal(g->vcpus[0].host_tid, 500);
	assert_int_equal(g->vcpus[0].how, VMS_LINK_GUEST_OPTION);
	assert_int_equal(g->vcpus[1].host_tid, 501);
	assert_int_equal(g->sync.method, VMS_SYNC_TIMESHIFT);
	assert_int_equal(g->sync.quality, VMS_SYNC_Q_EXACT);
	assert_int_equal(g->sync.pairs, 2);
	assert_int_equal(g->sync.reference, 0);
	assert_non_null(g->clock.timeshift);
	assert_int_equal(vms_model_machine_c(m, 0)->sync.method, VMS_SYNC_REFERENCE);
	assert_string_equal(vms_model_machine_c(m, 2)->name, "tid-777");
	uint32_t gm, vc;
	assert_int_equal(vms_model_vcpu_of(m, 0, 501, &gm, &vc), 0);
	assert_int_equal(gm, 1);
	assert_int_equal(vc, 1);
	/* an empty option name falls back to the file name */
	vms_model_free(m);
	gmap.name = (char *)"";
	m = vms_model_new();
	assert_int_equal(vms_model_add_source(m, 0, "h.dat", &hm, NULL, &err), 0);
	assert_int_equal(vms_model_add_source(m, 1, "/x/guest-Salamander4.dat", &gmeta, NULL, &err), 0);
	assert_int_equal(vms_model_finish(m, &err), 0);
	assert_string_equal(vms_model_machine_c(m, 1)->name, "guest-Salamander4");
	vms_model_free(m);
}

/* --map g:0=42 links a guest that carries nothing; the thread's kvm_entry then belongs to
 * it (no untraced guest). An unknown name is a usage error. */
static void test_user_map(void **state)
{
	(void)state;
	struct vms_trace_meta hm = {0}, gmeta = {0};
	hm.nr_cpus = 1;
	gmeta.nr_cpus = 1;
	struct vms_error err = {0};
	struct vms_model *m = vms_model_new();
	assert_int_equal(vms_model_add_source(m, 0, "a/host.xml", &hm, NULL, &err), 0);
	assert_int_equal(vms_model_add_source(m, 1, "b/g.xml", &gmeta, NULL, &err), 0);
	assert_int_equal(vms_model_user_map(m, "g", 0, 42, &err), 0);
	observe(m, mk(0, 0, 42, VMS_K_KVM_ENTRY, 0, 0, 0));
	assert_int_equal(vms_model_finish(m, &err), 0);
	assert_int_equal(vms_model_nr_machines(m), 2);
	const struct vms_machine *g = vms_model_machine_c(m, 1);
	assert_int_equal(g->role, VMS_ROLE_GUEST);
	assert_int_equal(g->host, 0);
	assert_int_equal(g->host_how, VMS_LINK_USER);
	assert_int_equal(g->vcpus[0].host_tid, 42);
	assert_int_equal(g->vcpus[0].how, VMS_LINK_USER);
	assert_string_equal(vms_link_how_name(g->vcpus[0].how), "user");
	vms_model_free(m);

	m = vms_model_new();
	assert_int_equal(vms_model_add_source(m, 0, "a/host.xml", &hm, NULL, &err), 0);
	assert_int_equal(vms_model_user_map(m, "nosuch", 0, 42, &err), 0);
	assert_int_equal(vms_model_finish(m, &err), VMS_ERR_USAGE);
	assert_non_null(strstr(err.msg, "nosuch"));
	vms_model_free(m);
}

/* Two files called host.xml: the second is "host-1". A forced guest keeps the user's name;
 * without any host the reference is machine 0. */
static void test_names_roles(void **state)
{
	(void)state;
	struct vms_trace_meta a = {0}, b = {0}, c = {0};
	struct vms_error err = {0};
	struct vms_model *m = vms_model_new();
	assert_int_equal(vms_model_add_source(m, 0, "a/host.xml", &a, NULL, &err), 0);
	assert_int_equal(vms_model_add_source(m, 1, "b/host.xml", &b, NULL, &err), 0);
	assert_int_equal(vms_model_add_source(m, 2, "c/x.dat", &c, NULL, &err), 0);
	assert_int_equal(vms_model_force_guest(m, 2, "web"), 0);
	assert_int_equal(vms_model_finish(m, &err), 0);
	assert_string_equal(vms_model_machine_c(m, 0)->name, "host");
	assert_string_equal(vms_model_machine_c(m, 1)->name, "host-1");
	assert_string_equal(vms_model_machine_c(m, 2)->name, "web");
	assert_int_equal(vms_model_machine_c(m, 0)->role, VMS_ROLE_NONE);
	assert_int_equal(vms_model_machine_c(m, 2)->role, VMS_ROLE_GUEST);
	assert_int_equal(vms_model_reference(m), 0);
	assert_int_equal(vms_model_find(m, "web"), 2);
	assert_int_equal(vms_model_find(m, "nope"), -1);
	vms_model_free(m);
}


/* The VMM's pid from what a recording shows when the VM starts inside it, one source each:
 * (a) exec of thread 500 (/usr/bin/qemu-system-x86_64), which then creates threads 505 and
 *     506 that run vCPUs 0 and 1; 505's rename to "CPU 0/KVM" is observed before its fork
 *     (another CPU's stream), and the fork's child name must not undo it -> pid 500, "exec";
 * (b) thread 710 (vCPU 0) created by 700, whose process nothing names -> 700, "parent";
 * (c) thread 800 named with tgid 790 (statedump), also forked by thread 1 -> 790, "statedump"
 *     (the statedump's tgid wins over the creator);
 * (d) thread 900 forked with child tgid 880 (LTTng's child_pid) -> 880, "fork".
 * Thread 600, created by 500 too but running no vCPU, is not assumed in 500's process (a
 * fork event does not say thread or process). Untraced guests: known pids ascending. */
static void test_vmm_pid(void **state)
{
	(void)state;
	struct vms_trace_meta hm;
	struct vms_error err = {0};
	struct vms_model *m = host_model(&hm, "host.dat");
	struct vms_event ex = mk(0, 0, 500, VMS_K_PROCESS_EXEC, 500, 0, 0);
	ex.s[0] = "/usr/bin/qemu-system-x86_64";
	observe(m, ex);
	observe(m, thread_name(0, 505, 0, "CPU 0/KVM"));
	struct vms_event fk[] = {mk(0, 0, 500, VMS_K_PROCESS_FORK, 500, 505, 0),
				 mk(0, 0, 500, VMS_K_PROCESS_FORK, 500, 506, 0),
				 mk(0, 0, 500, VMS_K_PROCESS_FORK, 500, 600, 0),
				 mk(0, 1, 700, VMS_K_PROCESS_FORK, 700, 710, 0),
				 mk(0, 1, 1, VMS_K_PROCESS_FORK, 1, 800, 0),
				 mk(0, 2, 1, VMS_K_PROCESS_FORK, 1, 900, 880)};
	for (size_t i = 0; i < sizeof fk / sizeof fk[0]; i++) {
		fk[i].s[0] = "qemu-system-x86";
		observe(m, fk[i]);
	}
	observe(m, thread_name(0, 800, 790, "CPU 0/KVM"));
	observe(m, mk(0, 1, 505, VMS_K_KVM_ENTRY, 0, 0, 0));
	observe(m, mk(0, 2, 506, VMS_K_KVM_ENTRY, 1, 0, 0));
	observe(m, mk(0, 3, 710, VMS_K_KVM_ENTRY, 0, 0, 0));
	observe(m, mk(0, 3, 800, VMS_K_KVM_ENTRY, 0, 0, 0));
	observe(m, mk(0, 3, 900, VMS_K_KVM_ENTRY, 0, 0, 0));
	assert_int_equal(vms_model_finish(m, &err), 0);
	assert_int_equal(vms_model_nr_machines(m), 5);
	static const char *names[] = {"pid-500", "pid-700", "pid-790", "pid-880"};
	static const int32_t pids[] = {500, 700, 790, 880};
	static const enum vms_pid_how hows[] = {VMS_PID_EXEC, VMS_PID_PARENT, VMS_PID_STATEDUMP,
						VMS_PID_FORK};
	static const char *how_names[] = {"exec", "parent", "statedump", "fork"};
	for (uint32_t i = 1; i < 5; i++) {
		const struct vms_machine *g = vms_model_machine_c(m, i);
		assert_string_equal(g->name, names[i - 1]);
		assert_int_equal(g->host_pid, pids[i - 1]);
		assert_int_equal(g->host_pid_how, hows[i - 1]);
		assert_string_equal(vms_pid_how_name(g->host_pid_how), how_names[i - 1]);
	}
	assert_int_equal(vms_model_machine_c(m, 1)->nr_vcpus, 2);
	const struct vms_thread_info *t = vms_model_thread(m, 0, 500);
	assert_non_null(t);
	assert_true(t->exec);
	assert_string_equal(t->comm, "qemu-system-x86"); /* TASK_COMM_LEN - 1 of the base name */
	t = vms_model_thread(m, 0, 505);
	assert_string_equal(t->comm, "CPU 0/KVM");
	assert_int_equal(t->parent, 500);
	assert_string_equal(vms_model_thread(m, 0, 506)->comm, "qemu-system-x86");
	t = vms_model_thread(m, 0, 600);
	assert_int_equal(t->parent, 500);
	assert_int_equal(t->pid, -1);
	assert_int_equal(t->pid_how, VMS_PID_NONE);
	vms_model_free(m);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_untraced),
		cmocka_unit_test(test_guest_option_timeshift),
		cmocka_unit_test(test_user_map),
		cmocka_unit_test(test_names_roles),
		cmocka_unit_test(test_vmm_pid),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
