# bash completion for vmscope (installed by `meson install` where bash-completion finds it).
# Commands come from `vmscope --help` and each command's options from `vmscope CMD --help`,
# so completion always agrees with the program; everything else completes file names
# (traces are files, or directories for CTF).
_vmscope()
{
	local cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD-1]} cmd="" i
	for ((i = 1; i < COMP_CWORD; i++)); do
		case ${COMP_WORDS[i]} in
		-*) ;;
		*) cmd=${COMP_WORDS[i]}; break ;;
		esac
	done
	if [[ -z $cmd ]]; then
		if [[ $cur == -* ]]; then
			COMPREPLY=($(compgen -W "--help --version" -- "$cur"))
		else
			COMPREPLY=($(compgen -W "$("${COMP_WORDS[0]}" --help 2>/dev/null |
				awk '/^commands:/ {on = 1; next} on && NF == 0 {on = 0} on {print $1}') help" -- "$cur"))
		fi
		return
	fi
	if [[ $cmd == help ]]; then
		COMPREPLY=($(compgen -W "$("${COMP_WORDS[0]}" --help 2>/dev/null |
			awk '/^commands:/ {on = 1; next} on && NF == 0 {on = 0} on {print $1}')" -- "$cur"))
		return
	fi
	case $prev in
	--compression) COMPREPLY=($(compgen -W "zstd zlib none" -- "$cur")); return ;;
	--scenario) COMPREPLY=($(compgen -W "noisy-neighbour quiet" -- "$cur")); return ;;
	--clock-model) COMPREPLY=($(compgen -W "auto linear" -- "$cur")); return ;;
	--query) COMPREPLY=($(compgen -W "top-steal exit-storms wakeup-p99 wakeup-p99-kernel" -- "$cur")); return ;;
	--top|--limit|--seed|--events|--level|--tsc-hz|--cpu-hz|--map|--offset) return ;;
	esac
	if [[ $cur == -* ]]; then
		COMPREPLY=($(compgen -W "$("${COMP_WORDS[0]}" "$cmd" --help 2>/dev/null |
			grep -o -- '--[a-z][a-z-]*' | sort -u) --version" -- "$cur"))
		return
	fi
	COMPREPLY=($(compgen -f -- "$cur"))
	compopt -o filenames 2>/dev/null
}
complete -F _vmscope vmscope
