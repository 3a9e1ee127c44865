/* The kernel's own texts for the events the generator writes, copied from a Linux 6.18 x86_64
 * kernel's /sys/kernel/tracing/events (header_page, header_event, sched/sched_switch,
 * sched/sched_wakeup, kvm/kvm_entry, kvm/kvm_exit). Only the part after the "format:" line is
 * kept: the name and the ID (which differ between kernels) are put in front when written. */
#include "synth/kernel_formats.h"

/* events/sched/sched_switch/format, after its "format:" line */
const char vms_synth_fmt_sched_switch[] =
	"\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n"
	"\tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;\n"
	"\tfield:unsigned char common_preempt_count;\toffset:3;\tsize:1;\tsigned:0;\n"
	"\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n"
	"\n"
	"\tfield:char prev_comm[16];\toffset:8;\tsize:16;\tsigned:0;\n"
	"\tfield:pid_t prev_pid;\toffset:24;\tsize:4;\tsigned:1;\n"
	"\tfield:int prev_prio;\toffset:28;\tsize:4;\tsigned:1;\n"
	"\tfield:long prev_state;\toffset:32;\tsize:8;\tsigned:1;\n"
	"\tfield:char next_comm[16];\toffset:40;\tsize:16;\tsigned:0;\n"
	"\tfield:pid_t next_pid;\toffset:56;\tsize:4;\tsigned:1;\n"
	"\tfield:int next_prio;\toffset:60;\tsize:4;\tsigned:1;\n"
	"\n"
	"print fmt: \"prev_comm=%s prev_pid=%d prev_prio=%d prev_state=%s%s ==> next_comm=%s next_pid=%d next_prio=%d\", REC->prev_comm, REC->prev_pid, REC->prev_prio, (REC->prev_state & ((((0x00000000 | 0x00000001 | 0x00000002 | 0x00000004 | 0x00000008 | 0x00000010 | 0x00000020 | 0x00000040) + 1) << 1) - 1)) ? __print_flags(REC->prev_state & ((((0x00000000 | 0x00000001 | 0x00000002 | 0x00000004 | 0x00000008 | 0x00000010 | 0x00000020 | 0x00000040) + 1) << 1) - 1), \"|\", { 0x00000001, \"S\" }, { 0x00000002, \"D\" }, { 0x00000004, \"T\" }, { 0x00000008, \"t\" }, { 0x00000010, \"X\" }, { 0x00000020, \"Z\" }, { 0x00000040, \"P\" }, { 0x00000080, \"I\" }) : \"R\", REC->prev_state & (((0x00000000 | 0x00000001 | 0x00000002 | 0x00000004 | 0x00000008 | 0x00000010 | 0x00000020 | 0x00000040) + 1) << 1) ? \"+\" : \"\", REC->next_comm, REC->next_pid, REC->next_prio\n";

/* events/sched/sched_wakeup/format, after its "format:" line */
const char vms_synth_fmt_sched_wakeup[] =
	"\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n"
	"\tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;\n"
	"\tfield:unsigned char common_preempt_count;\toffset:3;\tsize:1;\tsigned:0;\n"
	"\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n"
	"\n"
	"\tfield:char comm[16];\toffset:8;\tsize:16;\tsigned:0;\n"
	"\tfield:pid_t pid;\toffset:24;\tsize:4;\tsigned:1;\n"
	"\tfield:int prio;\toffset:28;\tsize:4;\tsigned:1;\n"
	"\tfield:int target_cpu;\toffset:32;\tsize:4;\tsigned:1;\n"
	"\n"
	"print fmt: \"comm=%s pid=%d prio=%d target_cpu=%03d\", REC->comm, REC->pid, REC->prio, REC->target_cpu\n";

/* events/kvm/kvm_entry/format, after its "format:" line */
const char vms_synth_fmt_kvm_entry[] =
	"\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n"
	"\tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;\n"
	"\tfield:unsigned char common_preempt_count;\toffset:3;\tsize:1;\tsigned:0;\n"
	"\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n"
	"\n"
	"\tfield:unsigned int vcpu_id;\toffset:8;\tsize:4;\tsigned:0;\n"
	"\tfield:unsigned long rip;\toffset:16;\tsize:8;\tsigned:0;\n"
	"\tfield:bool immediate_exit;\toffset:24;\tsize:1;\tsigned:0;\n"
	"\tfield:u32 intr_info;\toffset:28;\tsize:4;\tsigned:0;\n"
	"\tfield:u32 error_code;\toffset:32;\tsize:4;\tsigned:0;\n"
	"\n"
	"print fmt: \"vcpu %u, rip 0x%lx intr_info 0x%08x error_code 0x%08x%s\", REC->vcpu_id, REC->rip, REC->intr_info, REC->error_code, REC->immediate_exit ? \"[immediate exit]\" : \"\"\n";

/* events/kvm/kvm_exit/format, after its "format:" line */
const char vms_synth_fmt_kvm_exit[] =
	"\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n"
	"\tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;\n"
	"\tfield:unsigned char common_preempt_count;\toffset:3;\tsize:1;\tsigned:0;\n"
	"\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n"
	"\n"
	"\tfield:unsigned int exit_reason;\toffset:8;\tsize:4;\tsigned:0;\n"
	"\tfield:unsigned long guest_rip;\toffset:16;\tsize:8;\tsigned:0;\n"
	"\tfield:u32 isa;\toffset:24;\tsize:4;\tsigned:0;\n"
	"\tfield:u64 info1;\toffset:32;\tsize:8;\tsigned:0;\n"
	"\tfield:u64 info2;\toffset:40;\tsize:8;\tsigned:0;\n"
	"\tfield:u32 intr_info;\toffset:48;\tsize:4;\tsigned:0;\n"
	"\tfield:u32 error_code;\toffset:52;\tsize:4;\tsigned:0;\n"
	"\tfield:unsigned int vcpu_id;\toffset:56;\tsize:4;\tsigned:0;\n"
	"\tfield:u64 requests;\toffset:64;\tsize:8;\tsigned:0;\n"
	"\n"
	"print fmt: \"vcpu %u reason %s%s%s rip 0x%lx info1 0x%016llx info2 0x%016llx intr_info 0x%08x error_code 0x%08x requests 0x%016llx\", REC->vcpu_id, (REC->isa == 1) ? __print_symbolic(REC->exit_reason & 0xffff, { 0, \"EXCEPTION_NMI\" }, { 1, \"EXTERNAL_INTERRUPT\" }, { 2, \"TRIPLE_FAULT\" }, { 3, \"INIT_SIGNAL\" }, { 4, \"SIPI_SIGNAL\" }, { 7, \"INTERRUPT_WINDOW\" }, { 8, \"NMI_WINDOW\" }, { 9, \"TASK_SWITCH\" }, { 10, \"CPUID\" }, { 12, \"HLT\" }, { 13, \"INVD\" }, { 14, \"INVLPG\" }, { 15, \"RDPMC\" }, { 16, \"RDTSC\" }, { 18, \"VMCALL\" }, { 19, \"VMCLEAR\" }, { 20, \"VMLAUNCH\" }, { 21, \"VMPTRLD\" }, { 22, \"VMPTRST\" }, { 23, \"VMREAD\" }, { 24, \"VMRESUME\" }, { 25, \"VMWRITE\" }, { 26, \"VMOFF\" }, { 27, \"VMON\" }, { 28, \"CR_ACCESS\" }, { 29, \"DR_ACCESS\" }, { 30, \"IO_INSTRUCTION\" }, { 31, \"MSR_READ\" }, { 32, \"MSR_WRITE\" }, { 33, \"INVALID_STATE\" }, { 34, \"MSR_LOAD_FAIL\" }, { 36, \"MWAIT_INSTRUCTION\" }, { 37, \"MONITOR_TRAP_FLAG\" }, { 39, \"MONITOR_INSTRUCTION\" }, { 40, \"PAUSE_INSTRUCTION\" }, { 41, \"MCE_DURING_VMENTRY\" }, { 43, \"TPR_BELOW_THRESHOLD\" }, { 44, \"APIC_ACCESS\" }, { 45, \"EOI_INDUCED\" }, { 46, \"GDTR_IDTR\" }, { 47, \"LDTR_TR\" }, { 48, \"EPT_VIOLATION\" }, { 49, \"EPT_MISCONFIG\" }, { 50, \"INVEPT\" }, { 51, \"RDTSCP\" }, { 52, \"PREEMPTION_TIMER\" }, { 53, \"INVVPID\" }, { 54, \"WBINVD\" }, { 55, \"XSETBV\" }, { 56, \"APIC_WRITE\" }, { 57, \"RDRAND\" }, { 58, \"INVPCID\" }, { 59, \"VMFUNC\" }, { 60, \"ENCLS\" }, { 61, \"RDSEED\" }, { 62, \"PML_FULL\" }, { 63, \"XSAVES\" }, { 64, \"XRSTORS\" }, { 67, \"UMWAIT\" }, { 68, \"TPAUSE\" }, { 74, \"BUS_LOCK\" }, { 75, \"NOTIFY\" }, { 77, \"TDCALL\" }, { 84, \"MSR_READ_IMM\" }, { 85, \"MSR_WRITE_IMM\" }) : __print_symbolic(REC->exit_reason, { 0x000, \"read_cr0\" }, { 0x002, \"read_cr2\" }, { 0x003, \"read_cr3\" }, { 0x004, \"read_cr4\" }, { 0x008, \"read_cr8\" }, { 0x010, \"write_cr0\" }, { 0x012, \"write_cr2\" }, { 0x013, \"write_cr3\" }, { 0x014, \"write_cr4\" }, { 0x018, \"write_cr8\" }, { 0x020, \"read_dr0\" }, { 0x021, \"read_dr1\" }, { 0x022, \"read_dr2\" }, { 0x023, \"read_dr3\" }, { 0x024, \"read_dr4\" }, { 0x025, \"read_dr5\" }, { 0x026, \"read_dr6\" }, { 0x027, \"read_dr7\" }, { 0x030, \"write_dr0\" }, { 0x031, \"write_dr1\" }, { 0x032, \"write_dr2\" }, { 0x033, \"write_dr3\" }, { 0x034, \"write_dr4\" }, { 0x035, \"write_dr5\" }, { 0x036, \"write_dr6\" }, { 0x037, \"write_dr7\" }, { 0x040 + 0, \"DE excp\" }, { 0x040 + 1, \"DB excp\" }, { 0x040 + 3, \"BP excp\" }, { 0x040 + 4, \"OF excp\" }, { 0x040 + 5, \"BR excp\" }, { 0x040 + 6, \"UD excp\" }, { 0x040 + 7, \"NM excp\" }, { 0x040 + 8, \"DF excp\" }, { 0x040 + 10, \"TS excp\" }, { 0x040 + 11, \"NP excp\" }, { 0x040 + 12, \"SS excp\" }, { 0x040 + 13, \"GP excp\" }, { 0x040 + 14, \"PF excp\" }, { 0x040 + 16, \"MF excp\" }, { 0x040 + 17, \"AC excp\" }, { 0x040 + 18, \"MC excp\" }, { 0x040 + 19, \"XF excp\" }, { 0x060, \"interrupt\" }, { 0x061, \"nmi\" }, { 0x062, \"smi\" }, { 0x063, \"init\" }, { 0x064, \"vintr\" }, { 0x065, \"cr0_sel_write\" }, { 0x066, \"read_idtr\" }, { 0x067, \"read_gdtr\" }, { 0x068, \"read_ldtr\" }, { 0x069, \"read_rt\" }, { 0x06a, \"write_idtr\" }, { 0x06b, \"write_gdtr\" }, { 0x06c, \"write_ldtr\" }, { 0x06d, \"write_rt\" }, { 0x06e, \"rdtsc\" }, { 0x06f, \"rdpmc\" }, { 0x070, \"pushf\" }, { 0x071, \"popf\" }, { 0x072, \"cpuid\" }, { 0x073, \"rsm\" }, { 0x074, \"iret\" }, { 0x075, \"swint\" }, { 0x076, \"invd\" }, { 0x077, \"pause\" }, { 0x078, \"hlt\" }, { 0x079, \"invlpg\" }, { 0x07a, \"invlpga\" }, { 0x07b, \"io\" }, { 0x07c, \"msr\" }, { 0x07d, \"task_switch\" }, { 0x07e, \"ferr_freeze\" }, { 0x07f, \"shutdown\" }, { 0x080, \"vmrun\" }, { 0x081, \"hypercall\" }, { 0x082, \"vmload\" }, { 0x083, \"vmsave\" }, { 0x084, \"stgi\" }, { 0x085, \"clgi\" }, { 0x086, \"skinit\" }, { 0x087, \"rdtscp\" }, { 0x088, \"icebp\" }, { 0x089, \"wbinvd\" }, { 0x08a, \"monitor\" }, { 0x08b, \"mwait\" }, { 0x08d, \"xsetbv\" }, { 0x08f, \"write_efer_trap\" }, { 0x090, \"write_cr0_trap\" }, { 0x094, \"write_cr4_trap\" }, { 0x098, \"write_cr8_trap\" }, { 0x0a2, \"invpcid\" }, { 0x0a5, \"buslock\" }, { 0x0a6, \"idle-halt\" }, { 0x400, \"npf\" }, { 0x401, \"avic_incomplete_ipi\" }, { 0x402, \"avic_unaccelerated_access\" }, { 0x403, \"vmgexit\" }, { 0x80000001, \"vmgexit_mmio_read\" }, { 0x80000002, \"vmgexit_mmio_write\" }, { 0x80000003, \"vmgexit_nmi_complete\" }, { 0x80000004, \"vmgexit_ap_hlt_loop\" }, { 0x80000005, \"vmgexit_ap_jump_table\" }, { 0x80000010, \"vmgexit_page_state_change\" }, { 0x80000011, \"vmgexit_guest_request\" }, { 0x80000012, \"vmgexit_ext_guest_request\" }, { 0x80000013, \"vmgexit_ap_creation\" }, { 0x8000fffd, \"vmgexit_hypervisor_feature\" }, { -1, \"invalid_guest_state\" }), (REC->isa == 1 && REC->exit_reason & ~0xffff) ? \" \" : \"\", (REC->isa == 1) ? __print_flags(REC->exit_reason & ~0xffff, \" \", { 0x80000000, \"FAILED_VMENTRY\" }) : \"\", REC->guest_rip, REC->info1, REC->info2, REC->intr_info, REC->error_code, REC->requests\n";

/* events/kvm/kvm_vcpu_wakeup/format, after its "format:" line */
const char vms_synth_fmt_kvm_vcpu_wakeup[] =
	"\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n"
	"\tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;\n"
	"\tfield:unsigned char common_preempt_count;\toffset:3;\tsize:1;\tsigned:0;\n"
	"\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n"
	"\n"
	"\tfield:__u64 ns;\toffset:8;\tsize:8;\tsigned:0;\n"
	"\tfield:bool waited;\toffset:16;\tsize:1;\tsigned:0;\n"
	"\tfield:bool valid;\toffset:17;\tsize:1;\tsigned:0;\n"
	"\n"
	"print fmt: \"%s time %lld ns, polling %s\", REC->waited ? \"wait\" : \"poll\", REC->ns, REC->valid ? \"valid\" : \"invalid\"\n";

/* events/sched/sched_process_exec/format (6.x), after its "format:" line */
const char vms_synth_fmt_sched_process_exec[] =
	"\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n"
	"\tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;\n"
	"\tfield:unsigned char common_preempt_count;\toffset:3;\tsize:1;\tsigned:0;\n"
	"\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n"
	"\n"
	"\tfield:__data_loc char[] filename;\toffset:8;\tsize:4;\tsigned:0;\n"
	"\tfield:pid_t pid;\toffset:12;\tsize:4;\tsigned:1;\n"
	"\tfield:pid_t old_pid;\toffset:16;\tsize:4;\tsigned:1;\n"
	"\n"
	"print fmt: \"filename=%s pid=%d old_pid=%d\", __get_str(filename), REC->pid, REC->old_pid\n";

/* events/sched/sched_process_fork/format (6.x), after its "format:" line */
const char vms_synth_fmt_sched_process_fork[] =
	"\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n"
	"\tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;\n"
	"\tfield:unsigned char common_preempt_count;\toffset:3;\tsize:1;\tsigned:0;\n"
	"\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n"
	"\n"
	"\tfield:char parent_comm[16];\toffset:8;\tsize:16;\tsigned:0;\n"
	"\tfield:pid_t parent_pid;\toffset:24;\tsize:4;\tsigned:1;\n"
	"\tfield:char child_comm[16];\toffset:28;\tsize:16;\tsigned:0;\n"
	"\tfield:pid_t child_pid;\toffset:44;\tsize:4;\tsigned:1;\n"
	"\n"
	"print fmt: \"comm=%s pid=%d child_comm=%s child_pid=%d\", REC->parent_comm, REC->parent_pid, REC->child_comm, REC->child_pid\n";

/* events/header_page */
const char vms_synth_header_page[] =
	"\tfield: u64 timestamp;\toffset:0;\tsize:8;\tsigned:0;\n"
	"\tfield: local_t commit;\toffset:8;\tsize:8;\tsigned:1;\n"
	"\tfield: int overwrite;\toffset:8;\tsize:1;\tsigned:1;\n"
	"\tfield: char data;\toffset:16;\tsize:4080;\tsigned:0;\n";

/* events/header_event */
const char vms_synth_header_event[] =
	"# compressed entry header\n"
	"\ttype_len    :    5 bits\n"
	"\ttime_delta  :   27 bits\n"
	"\tarray       :   32 bits\n"
	"\n"
	"\tpadding     : type == 29\n"
	"\ttime_extend : type == 30\n"
	"\ttime_stamp : type == 31\n"
	"\tdata max type_len  == 28\n";
