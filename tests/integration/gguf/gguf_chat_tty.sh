#!/usr/bin/env bash
# --chat in a terminal (issue 41), driven through tmux (send-keys, capture-pane) on a tiny
# random-weight llama with Llama 3.1's template: the banner and "> " prompts a terminal gets, each
# reply's text the one --chat prints with stdin piped, /reset said and the first reply again, Ctrl-D
# ends the program with status 0. Waits by polling the pane, not by fixed sleeps. Skips without tmux.
# usage: gguf_chat_tty.sh TGC_BINARY REPO_ROOT
set -uo pipefail
tgc="$1"; root="$2"
source "$root/tests/integration/gguf/gguf_ref.sh"
command -v tmux >/dev/null || { echo "SKIP: no tmux"; exit 77; }
work="$(mktemp -d)"
sock="tgc-chat-$$"  # a tmux server of this test's own
trap 'tmux -L "$sock" kill-server 2>/dev/null; rm -rf "$work"' EXIT
fail=0
CHAT_TEMPLATE="$root/tools/gguf-ref/chat-templates/llama-3.1.jinja" /usr/bin/python3 "$root/tools/gguf-ref/make_llama_gguf.py" \
  "$ref/llama.cpp/models/ggml-vocab-llama-bpe.gguf" "$work/m.gguf" f32 >/dev/null &&
  "$tgc" compile "$work/m.gguf" --dynamic n_tokens=128 --ctx 128 -o "$work/llm" >/dev/null 2>"$work/err" ||
  { echo "FAIL model or compile: $(cat "$work/err")"; exit 1; }
# The replies with stdin piped: the text each turn prints (a reply may hold line breaks of its own).
args=(--system "You are terse." -n 6)
printf 'Hello there\nHow are you?\n' | "$work/llm" --chat "${args[@]}" >"$work/piped.txt" 2>/dev/null ||
  { echo "FAIL piped --chat"; exit 1; }

pane() { tmux -L "$sock" capture-pane -t chat -p -J -S -200; }
wait_for() {  # COUNT PATTERN: until the pane shows PATTERN COUNT times (10 s at most)
  for _ in $(seq 100); do
    [ "$(pane | grep -c -- "$2")" -ge "$1" ] && return 0
    sleep 0.1
  done
  echo "FAIL waiting for $1 x '$2'; the pane:"; pane; return 1
}
tmux -L "$sock" new-session -d -s chat -x 200 -y 50 "$work/llm --chat --system 'You are terse.' -n 6; echo \"exit \$?\"; sleep 30"
wait_for 1 '^> $' || fail=1
tmux -L "$sock" send-keys -t chat "Hello there" Enter
wait_for 1 '^\[prompt' || fail=1
tmux -L "$sock" send-keys -t chat "How are you?" Enter
wait_for 2 '^\[prompt' || fail=1
tmux -L "$sock" send-keys -t chat "/reset" Enter
wait_for 1 'conversation cleared' || fail=1
tmux -L "$sock" send-keys -t chat "Hello there" Enter
wait_for 3 '^\[prompt' || fail=1
tmux -L "$sock" send-keys -t chat C-d
wait_for 1 '^exit ' || fail=1
pane >"$work/pane.txt"
/usr/bin/python3 - "$work/pane.txt" "$work/piped.txt" <<'PY' || fail=1
import re, sys
pane = open(sys.argv[1], encoding='utf-8', errors='replace').read().rstrip('\n').split('\n')
piped = open(sys.argv[2], encoding='utf-8', errors='replace').read()
# The pane: banner, then per turn "> LINE", the reply's lines, "[prompt ...]"; "> " and "exit 0" last.
turns, cur = [], None
for line in pane:
    if line.startswith('> '):
        cur = [line[2:], []]; turns.append(cur)
    elif line.startswith('[prompt') or line.startswith('[conversation') or line.startswith('[chat'):
        pass
    elif cur is not None:
        cur[1].append(line)
replies = ['\n'.join(r).rstrip() for u, r in turns if u not in ('/reset', '')]
ok_banner = pane[0].startswith('[chat template llama3;')
ok_exit = pane[-1] == 'exit 0'
ok_replies = len(replies) == 3 and replies[0] == replies[2] and piped.rstrip().startswith(replies[0]) and replies[1] in piped
for what, ok in (('the banner names the template', ok_banner), ('each reply the piped text; after /reset the first again', ok_replies),
                 ('Ctrl-D: exit 0', ok_exit)):
    print(f'{"ok  " if ok else "FAIL"} tmux: {what}')
if not (ok_banner and ok_replies and ok_exit):
    print('\n'.join(pane)); sys.exit(1)
PY
exit $fail
