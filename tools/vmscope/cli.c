typedef int vms_cli_placeholder;
