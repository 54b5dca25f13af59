/**
 * Shell functions that complete the values of flags and arguments (client ids, profile names,
 * token states) and hand everything else to the autocomplete plugin's own function, which knows
 * commands and flags. The values come from `tokenctl completion --values KIND`, with the `--db`
 * of the line being completed, so a client id is one of the store the command will act on.
 */

/** Which flag's value, or which command's first argument, is completed from which list. */
export const VALUE_FLAGS: Record<string, CompletionKind> = { '--client': 'clients', '--profile': 'profiles', '--state': 'states' };
export const VALUE_ARGUMENTS: Record<string, CompletionKind> = {
  'client show': 'clients',
  'client update': 'clients',
  'client delete': 'clients',
  'client rotate-secret': 'clients',
  'profile check': 'profiles',
  'profile remove': 'profiles',
};
export const COMPLETION_KINDS = ['clients', 'profiles', 'states'] as const;
export type CompletionKind = (typeof COMPLETION_KINDS)[number];

const flagCases = (indent: string) =>
  Object.entries(VALUE_FLAGS)
    .map(([flag, kind]) => `${indent}${flag}) kind=${kind} ;;`)
    .join('\n');
const argumentCases = (indent: string) =>
  Object.entries(VALUE_ARGUMENTS)
    .map(([command, kind]) => `${indent}"${command}") kind=${kind} ;;`)
    .join('\n');

export function completionScript(shell: 'bash' | 'zsh', bin: string): string {
  return shell === 'bash' ? bashScript(bin) : zshScript(bin);
}

function bashScript(bin: string): string {
  return `# ${bin}: completion of values (client ids, profile names, token states).
# Load it after the autocomplete plugin's script (tokenctl autocomplete bash), which completes
# commands and flags; this one hands everything but values to it.
_${bin}_values()
{
  local cur="\${COMP_WORDS[COMP_CWORD]}" prev="\${COMP_WORDS[COMP_CWORD-1]}" kind="" db=() words=() i
  # The words before the cursor without --db and its value, which may come anywhere.
  for ((i = 0; i < COMP_CWORD; i++)); do
    if [[ "\${COMP_WORDS[i]}" == --db ]]; then db=(--db "\${COMP_WORDS[i+1]}"); ((i++)); else words+=("\${COMP_WORDS[i]}"); fi
  done
  case "$prev" in
${flagCases('    ')}
  esac
  if [[ -z "$kind" && "$cur" != -* && \${#words[@]} -eq 3 ]]; then
    case "\${words[1]} \${words[2]}" in
${argumentCases('      ')}
    esac
  fi
  if [[ -n "$kind" ]]; then
    local IFS=$'\\n'
    COMPREPLY=( $(compgen -W "$(${bin} completion --values "$kind" "\${db[@]}" 2>/dev/null)" -- "$cur") )
    return 0
  fi
  if declare -F _${bin}_autocomplete >/dev/null; then _${bin}_autocomplete; fi
}
complete -o default -F _${bin}_values ${bin}
`;
}

function zshScript(bin: string): string {
  return `# ${bin}: completion of values (client ids, profile names, token states).
# Load it after the autocomplete plugin's script (tokenctl autocomplete zsh), which completes
# commands and flags; this one hands everything but values to it.
_${bin}_values() {
  local kind="" i
  local -a db values before
  # The words before the cursor without --db and its value, which may come anywhere.
  for ((i = 1; i < CURRENT; i++)); do
    if [[ "\${words[i]}" == --db ]]; then db=(--db "\${words[i+1]}"); ((i++)); else before+=("\${words[i]}"); fi
  done
  case "\${words[CURRENT-1]}" in
${flagCases('    ')}
  esac
  if [[ -z "$kind" && "\${words[CURRENT]}" != -* && \${#before[@]} -eq 3 ]]; then
    case "\${before[2]} \${before[3]}" in
${argumentCases('      ')}
    esac
  fi
  if [[ -n "$kind" ]]; then
    values=(\${(f)"$(${bin} completion --values "$kind" "\${db[@]}" 2>/dev/null)"})
    compadd -a values
    return
  fi
  (( $+functions[_${bin}] )) && _${bin} "$@"
}
compdef _${bin}_values ${bin}
`;
}
