#!/bin/sh
# A sample agent for `make run`: it reads its prompt on stdin, "works" through a few steps,
# and fails its first attempt at a task whose title says (flaky). Its output is the run's
# transcript (`corral logs RUN`); corral gives it CORRAL_TASK_ID, CORRAL_RUN_ID and the rest.
prompt=$(cat)
title=$(printf '%s\n' "$prompt" | sed -n 's/^Title: //p')
attempt=$(printf '%s\n' "$prompt" | sed -n 's/^Attempt: //p')
echo "$CORRAL_TASK_ID: $title (attempt $attempt)"
for step in read plan edit test; do
  echo "  $step..."
  sleep "${AGENT_STEP_S:-0.25}"
done
case "$title" in
  *flaky*) if [ "$attempt" -le 1 ]; then echo "  tests failed" >&2; exit 1; fi ;;
esac
echo "  done"
