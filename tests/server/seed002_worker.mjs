// A corral worker written in Node 20 with nothing but the built-in fetch: seed 002's worker
// lifecycle over corral serve's worker routes (docs/http-api.md, "Worker routes").
//
//   register (the server answers the heartbeat interval) -> heartbeat on that interval
//   (the answer says whether to drain) -> long-poll claims with the kinds it can run ->
//   complete or fail each task under its fencing token -> when told to drain (or its
//   claims are refused), deregister and exit 0.
//
// Environment: CORRAL_URL, CORRAL_TOKEN (a worker token), WORKER_NAME. A task whose
// payload says {"fail": true} is failed with "asked to fail"; any other is completed with
// {"echo": payload}. Exit 1 on anything unexpected, saying what.

const base = process.env.CORRAL_URL;
const headers = {
  authorization: `Bearer ${process.env.CORRAL_TOKEN}`,
  "content-type": "application/json",
};
const WAIT_S = 30; // the server holds a claim at most this long, then answers 204

async function call(method, path, body, timeoutMs = 10_000) {
  const response = await fetch(base + path, {
    method,
    headers,
    body: body === undefined ? undefined : JSON.stringify(body),
    signal: AbortSignal.timeout(timeoutMs),
  });
  const text = await response.text();
  return { status: response.status, data: text ? JSON.parse(text) : null };
}

function expect(answer, status, what) {
  if (answer.status !== status) {
    throw new Error(`${what}: HTTP ${answer.status} ${JSON.stringify(answer.data)}`);
  }
  return answer.data;
}

let draining = false;

async function heartbeatEvery(workerId, intervalS) {
  while (!draining) {
    await new Promise((resolve) => setTimeout(resolve, intervalS * 1000));
    const beat = await call("POST", `/api/workers/${workerId}/heartbeat`, {
      rss_bytes: process.memoryUsage().rss,
    });
    if (beat.status === 409) {
      draining = true; // dead or offline: the server says stop
      return;
    }
    if (expect(beat, 200, "heartbeat").drain) {
      draining = true;
    }
  }
}

async function run(task, token) {
  const path = `/api/tasks/${task.id}`;
  if (task.payload && task.payload.fail) {
    const failed = await call("POST", `${path}/fail`, { token, error: "asked to fail" });
    expect(failed, 200, "fail");
    return;
  }
  const done = await call("POST", `${path}/complete`, { token, result: { echo: task.payload } });
  expect(done, 200, "complete");
}

async function main() {
  const registered = expect(
    await call("POST", "/api/workers", {
      name: process.env.WORKER_NAME,
      kinds: ["echo"],
      hostname: "node-host",
      pid: process.pid,
      version: `node ${process.version}`,
      labels: { language: "javascript" },
    }),
    201,
    "register",
  );
  const workerId = registered.worker.id;
  const beating = heartbeatEvery(workerId, registered.heartbeat_interval_s);
  while (!draining) {
    const claimed = await call(
      "POST",
      `/api/workers/${workerId}/claim`,
      { kinds: ["echo"], wait_s: WAIT_S },
      (WAIT_S + 10) * 1000,
    );
    if (claimed.status === 204) continue; // nothing came: ask again at once
    if (claimed.status === 409) break; // drained (or gone): take nothing more
    const held = expect(claimed, 200, "claim");
    await run(held.task, held.token);
  }
  draining = true;
  expect(await call("DELETE", `/api/workers/${workerId}`), 200, "deregister");
  await beating.catch(() => {}); // its last beat may meet the worker offline
}

main().then(
  () => process.exit(0),
  (error) => {
    console.error(`seed002 worker: ${error.message}`);
    process.exit(1);
  },
);
