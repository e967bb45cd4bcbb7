#!/bin/sh
# A sample coding agent for `make run`. corral runs it in the task's own git worktree, with
# the prompt on stdin; it "works" through a few steps, then edits the file the task names.
# Like the real agent CLIs it commits only when the prompt asks it to (Claude Code commits
# when asked, Codex never does): otherwise it leaves its edit in the worktree, and corral
# commits what it left ([worktree] commit = auto). Its output is the run's transcript
# (`corral logs RUN`).
#
# The task's description says what to do, one `Key: value` per line:
#   File: notes/cache.md      the file to write (folders are made)
#   Line: some text           the line to put in it (appended, or replacing `Replace:`)
#   Replace: color =          replace the line starting with this instead of appending
#   Steps: 6                  how many steps of AGENT_STEP_S it takes (default 4)
#   Commit: yes               commit the edit itself, as an agent asked to commit does
#   Unsure: yes               change nothing and say why, until a person answers
# A title containing (flaky) fails its first attempt. After a land conflict or a review,
# corral passes the note in CORRAL_REVIEW_NOTE: the agent merges the base in, settles the
# conflict on its own line and commits the merge (as the note asks), and (after a review)
# adds what was asked. After a person answered (`corral answer`), the prompt ends with
# "A person answered: TEXT": the agent writes TEXT as its line.
set -e
prompt=$(cat)
field() { printf '%s\n' "$prompt" | sed -n "s/^$1: //p" | head -n 1; }
title=$(field Title)
attempt=$(field Attempt)
file=$(field File)
line=$(field Line)
replace=$(field Replace)
steps=$(field Steps)
commit=$(field Commit)
unsure=$(field Unsure)
answer=$(field "A person answered")
echo "$CORRAL_TASK_ID: $title (attempt $attempt, branch $CORRAL_BRANCH)"

if [ -n "$CORRAL_REVIEW_NOTE" ]; then
  echo "  note: $CORRAL_REVIEW_NOTE"
  if ! git merge --quiet --no-edit "$CORRAL_BASE_REF" >/dev/null 2>&1; then
    echo "  merging $CORRAL_BASE_REF: conflict, keeping this task's line"
    git checkout --ours -- "$file" 2>/dev/null || true
    git add -- "$file"
    git commit --quiet --no-edit
  fi
fi

n=0
for step in read plan edit test review commit; do
  n=$((n + 1))
  [ "$n" -gt "${steps:-4}" ] && break
  echo "  $step..."
  sleep "${AGENT_STEP_S:-0.25}"
done
case "$title" in
  *flaky*) if [ "$attempt" -le 1 ]; then echo "  tests failed" >&2; exit 1; fi ;;
esac
# The last line of every run: what it spent, in corral's generic convention (docs/agents.md).
usage() {
  printf '{"usage": {"input_tokens": %d, "output_tokens": %d, "cost_usd": 0.00%d}}\n' \
    $((n * 1200)) $((n * 150)) "$n"
}

if [ -n "$unsure" ] && [ -z "$answer" ]; then
  echo "  $file reads fine to me: I am not sure what to change, so I changed nothing"
  usage
  exit 0
fi
[ -n "$answer" ] && { echo "  a person answered: $answer"; line=$answer; }

mkdir -p "$(dirname "$file")"
if [ -n "$replace" ] && [ -f "$file" ]; then
  grep -v "^$replace" "$file" > "$file.new" || true
  printf '%s\n' "$line" >> "$file.new"
  mv "$file.new" "$file"
else
  printf '%s\n' "$line" >> "$file"
fi
case "$CORRAL_REVIEW_NOTE" in
  *"add a test"*) printf 'def test_%s():\n    assert True\n' "$(echo "$CORRAL_TASK_ID" | tr - _)" \
                    > "tests_$CORRAL_TASK_ID.py" ;;
esac
if [ "$commit" = yes ]; then
  git add -A
  git commit --quiet -m "$title" -m "corral task $CORRAL_TASK_ID, attempt $attempt"
  echo "  committed $(git rev-parse --short HEAD): $title"
else
  echo "  edited $file (not committed: nobody asked me to)"
fi
usage
