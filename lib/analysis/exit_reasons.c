/* VM exit reason names, from the Linux kernel's uapi headers (the names `perf kvm stat` and
 * the kvm_exit tracepoint print): arch/x86/include/uapi/asm/vmx.h VMX_EXIT_REASONS and
 * arch/x86/include/uapi/asm/svm.h SVM_EXIT_REASONS. A code not in the tables has no name
 * (NULL) and is shown as its number by the callers. */
#include <stddef.h>

#include "vmscope/analysis.h"

/* VMX basic exit reasons (Intel SDM vol. 3 appendix C), indexed by code */
static const char *const vmx_names[] = {
	[0] = "EXCEPTION_NMI",
	[1] = "EXTERNAL_INTERRUPT",
	[2] = "TRIPLE_FAULT",
	[3] = "INIT_SIGNAL",
	[7] = "INTERRUPT_WINDOW",
	[8] = "NMI_WINDOW",
	[9] = "TASK_SWITCH",
	[10] = "CPUID",
	[12] = "HLT",
	[13] = "INVD",
	[14] = "INVLPG",
	[15] = "RDPMC",
	[16] = "RDTSC",
	[18] = "VMCALL",
	[19] = "VMCLEAR",
	[20] = "VMLAUNCH",
	[21] = "VMPTRLD",
	[22] = "VMPTRST",
	[23] = "VMREAD",
	[24] = "VMRESUME",
	[25] = "VMWRITE",
	[26] = "VMOFF",
	[27] = "VMON",
	[28] = "CR_ACCESS",
	[29] = "DR_ACCESS",
	[30] = "IO_INSTRUCTION",
	[31] = "MSR_READ",
	[32] = "MSR_WRITE",
	[33] = "INVALID_STATE",
	[34] = "MSR_LOAD_FAIL",
	[36] = "MWAIT_INSTRUCTION",
	[37] = "MONITOR_TRAP_FLAG",
	[39] = "MONITOR_INSTRUCTION",
	[40] = "PAUSE_INSTRUCTION",
	[41] = "MCE_DURING_VMENTRY",
	[43] = "TPR_BELOW_THRESHOLD",
	[44] = "APIC_ACCESS",
	[45] = "EOI_INDUCED",
	[46] = "GDTR_IDTR",
	[47] = "LDTR_TR",
	[48] = "EPT_VIOLATION",
	[49] = "EPT_MISCONFIG",
	[50] = "INVEPT",
	[51] = "RDTSCP",
	[52] = "PREEMPTION_TIMER",
	[53] = "INVVPID",
	[54] = "WBINVD",
	[55] = "XSETBV",
	[56] = "APIC_WRITE",
	[57] = "RDRAND",
	[58] = "INVPCID",
	[59] = "VMFUNC",
	[60] = "ENCLS",
	[61] = "RDSEED",
	[62] = "PML_FULL",
	[63] = "XSAVES",
	[64] = "XRSTORS",
	[67] = "UMWAIT",
	[68] = "TPAUSE",
	[74] = "BUS_LOCK",
	[75] = "NOTIFY",
	[77] = "TDCALL",
};

static const struct {
	uint32_t code;
	const char *name;
} svm_names[] = {
	{0x000, "read_cr0"}, {0x002, "read_cr2"}, {0x003, "read_cr3"}, {0x004, "read_cr4"},
	{0x008, "read_cr8"}, {0x010, "write_cr0"}, {0x012, "write_cr2"}, {0x013, "write_cr3"},
	{0x014, "write_cr4"}, {0x018, "write_cr8"}, {0x020, "read_dr0"}, {0x021, "read_dr1"},
	{0x022, "read_dr2"}, {0x023, "read_dr3"}, {0x024, "read_dr4"}, {0x025, "read_dr5"},
	{0x026, "read_dr6"}, {0x027, "read_dr7"}, {0x030, "write_dr0"}, {0x031, "write_dr1"},
	{0x032, "write_dr2"}, {0x033, "write_dr3"}, {0x034, "write_dr4"}, {0x035, "write_dr5"},
	{0x036, "write_dr6"}, {0x037, "write_dr7"},
	/* SVM_EXIT_EXCP_BASE (0x40) + exception vector */
	{0x040 + 0, "DE excp"}, {0x040 + 1, "DB excp"}, {0x040 + 3, "BP excp"},
	{0x040 + 4, "OF excp"}, {0x040 + 5, "BR excp"}, {0x040 + 6, "UD excp"},
	{0x040 + 7, "NM excp"}, {0x040 + 8, "DF excp"}, {0x040 + 10, "TS excp"},
	{0x040 + 11, "NP excp"}, {0x040 + 12, "SS excp"}, {0x040 + 13, "GP excp"},
	{0x040 + 14, "PF excp"}, {0x040 + 16, "MF excp"}, {0x040 + 17, "AC excp"},
	{0x040 + 18, "MC excp"}, {0x040 + 19, "XF excp"},
	{0x060, "interrupt"}, {0x061, "nmi"}, {0x062, "smi"}, {0x063, "init"}, {0x064, "vintr"},
	{0x065, "cr0_sel_write"}, {0x066, "read_idtr"}, {0x067, "read_gdtr"},
	{0x068, "read_ldtr"}, {0x069, "read_rt"}, {0x06a, "write_idtr"}, {0x06b, "write_gdtr"},
	{0x06c, "write_ldtr"}, {0x06d, "write_rt"}, {0x06e, "rdtsc"}, {0x06f, "rdpmc"},
	{0x070, "pushf"}, {0x071, "popf"}, {0x072, "cpuid"}, {0x073, "rsm"}, {0x074, "iret"},
	{0x075, "swint"}, {0x076, "invd"}, {0x077, "pause"}, {0x078, "hlt"}, {0x079, "invlpg"},
	{0x07a, "invlpga"}, {0x07b, "io"}, {0x07c, "msr"}, {0x07d, "task_switch"},
	{0x07e, "ferr_freeze"}, {0x07f, "shutdown"}, {0x080, "vmrun"}, {0x081, "hypercall"},
	{0x082, "vmload"}, {0x083, "vmsave"}, {0x084, "stgi"}, {0x085, "clgi"},
	{0x086, "skinit"}, {0x087, "rdtscp"}, {0x088, "icebp"}, {0x089, "wbinvd"},
	{0x08a, "monitor"}, {0x08b, "mwait"}, {0x08d, "xsetbv"}, {0x08f, "write_efer_trap"},
	{0x090, "write_cr0_trap"}, {0x094, "write_cr4_trap"}, {0x098, "write_cr8_trap"},
	{0x0a2, "invpcid"}, {0x400, "npf"}, {0x401, "avic_incomplete_ipi"},
	{0x402, "avic_unaccelerated_access"},
	{0xffffffffu, "invalid_guest_state"}, /* SVM_EXIT_ERR (-1) */
};

const char *vms_exit_reason_name(uint32_t isa, uint32_t reason)
{
	if (isa == 1) {
		/* the tracepoint may carry the full exit-reason field: bits 15:0 are the basic
		 * reason, bit 31 says the VM entry failed */
		uint32_t basic = reason & 0xffff;
		if (basic < sizeof vmx_names / sizeof vmx_names[0])
			return vmx_names[basic];
		return NULL;
	}
	if (isa == 2) {
		for (size_t i = 0; i < sizeof svm_names / sizeof svm_names[0]; i++)
			if (svm_names[i].code == reason)
				return svm_names[i].name;
	}
	return NULL;
}

bool vms_exit_is_halt(uint32_t isa, uint32_t reason)
{
	/* isa 0: a kvm_exit without the isa field (older kernels, VMX only) */
	return isa == 2 ? reason == 0x78 : reason == 12;
}
