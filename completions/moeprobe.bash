# bash completion for moeprobe (installed by `make install` into
# $(PREFIX)/share/bash-completion/completions/moeprobe). The options of a
# command are read from its own --help, so they are always the binary's.
_moeprobe()
{
    local cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD-1]}
    local prog=${COMP_WORDS[0]} cmd=${COMP_WORDS[1]} i
    local cmds="qualify diagnose resolve minimize soak bisect scan explain inspect report version"
    COMPREPLY=()
    if [ "$COMP_CWORD" -eq 1 ]; then
        COMPREPLY=($(compgen -W "$cmds --help" -- "$cur"))
        return
    fi
    # after '--': the server command
    for ((i = 2; i < COMP_CWORD; i++)); do
        if [ "${COMP_WORDS[i]}" = "--" ]; then
            if [ "$i" -eq $((COMP_CWORD - 1)) ]; then
                COMPREPLY=($(compgen -c -- "$cur"))
            else
                COMPREPLY=($(compgen -f -- "$cur"))
            fi
            return
        fi
    done
    case $prev in
    --preset) COMPREPLY=($(compgen -W "sm12x-nvfp4" -- "$cur")); return ;;
    --objective) COMPREPLY=($(compgen -W "sequential throughput ttft tpot" -- "$cur")); return ;;
    --api) COMPREPLY=($(compgen -W "completions chat" -- "$cur")); return ;;
    --format) COMPREPLY=($(compgen -W "md json html csv issue" -- "$cur")); return ;;
    --by) COMPREPLY=($(compgen -W "verdict resolved throughput:" -- "$cur")); return ;;
    --out | --resume | --model-dir | --engine-dir | --engine | --knowledge | --log | --builds | \
        --slurm-script | --merge)
        COMPREPLY=($(compgen -f -- "$cur"))
        return ;;
    esac
    if [[ $cur == -* ]]; then
        local opts
        if [ "$cmd" = report ]; then
            opts="--format --compare --merge --candidate --objective --percentiles --no-write --help"
        else
            opts=$("$prog" "$cmd" --help 2>/dev/null |
                sed -n -e 's/^  \(--[a-z][a-z0-9-]*\).*/\1/p' -e 's/^  -h, \(--help\).*/\1/p')
        fi
        COMPREPLY=($(compgen -W "$opts" -- "$cur"))
        return
    fi
    COMPREPLY=($(compgen -f -- "$cur")) # RUNDIR, LOGFILE, MODEL_DIR
}
complete -F _moeprobe moeprobe
