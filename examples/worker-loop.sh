#!/usr/bin/env bash
# A complete corral worker in bash: the loop from the README, with `my_work` filled in.
# It needs only `corral` and `jq` on PATH, and CORRAL_DB (or a .corral/ folder) to find the store.
set -u

my_work() {
  # Pretend to work: read the task, take a moment, and fail when its payload asks to.
  local task="$1" spec
  spec=$(corral show "$task" --json)
  sleep "$(jq -r '.payload.seconds // 0.5' <<<"$spec")"
  [ "$(jq -r '.attempts' <<<"$spec")" -gt "$(jq -r '.payload.fail_times // 0' <<<"$spec")" ]
}

WORKER_ID=$(corral worker register --name "${1:-my-worker}" --json | jq -r '.id')
trap 'corral worker deregister "$WORKER_ID" >/dev/null; exit 0' SIGTERM SIGINT
while true; do
  corral worker heartbeat "$WORKER_ID" >/dev/null
  TASK=$(corral ready --limit 1 --json | jq -r '.[0].id')
  [ -z "$TASK" ] || [ "$TASK" = null ] && sleep 1 && continue
  corral claim "$TASK" "$WORKER_ID" >/dev/null 2>&1 || continue
  if my_work "$TASK"; then
    corral done "$TASK" >/dev/null
  else
    corral fail "$TASK" --error "my_work failed on attempt $(corral show "$TASK" --json | jq .attempts)" >/dev/null
  fi
done
