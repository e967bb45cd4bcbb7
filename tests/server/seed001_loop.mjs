#!/usr/bin/env node
// Seed 001's worker ("Worker Service Architecture", /work/shared/seeds/001_*.txt), its code
// as the seed has it, run against `corral serve` by tests/server/test_board_routes.py.
//
// Below the line "THE SEED'S CODE" every function is the seed's, unchanged. Above it is
// what the seed leaves out or what corral asks of a client that the seed's code does not do:
//
// - The transport. The seed calls fetch('http://localhost:8787/...') with no credentials;
//   corral serves elsewhere (CORRAL_URL) and wants a bearer token. `fetch` is wrapped to
//   send each call there with CORRAL_TOKEN, a worker token named after the slot: it is
//   the slot, and all the loop needs (its first heartbeat or claim registers the slot's
//   corral worker; it spawns and kills its own sessions). A GET of /api/tasks asks for
//   `view=seed001`, the seed's task shape (corral's own shape stays the default for
//   corral's clients).
// - The helpers the seed names but does not show: sleep, the heartbeat file
//   (`./slot-heartbeats.mjs` in the seed: .clawhub/worker-heartbeats.json, each heartbeat
//   also POSTed to /api/heartbeats, which keeps the slot's worker alive), getVersion,
//   the restart count, killSession, getCurrentTask, waitForTaskOrTimeout, mainLoop.
// - Time: `sleep` scales every wait by SEED_TIME_SCALE (default 1, the seed's 30 s polls
//   and 15 s checks), so a test runs the same loop in a fraction of a second per step.
// - One call the seed describes but does not place: recoverFromCrash ("On-Restart
//   Behavior") runs first in main.
//
// Left out: the stale-worker watchdog (a separate service in the seed), and the helpers
// no part of the loop calls (selectNextTask, filterTasksForSlot, monitorWithTimeout).

import { randomUUID } from 'node:crypto';
import { mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';

const SEED_ORIGIN = 'http://localhost:8787';
const CORRAL_URL = process.env.CORRAL_URL;
const TOKEN = process.env.CORRAL_TOKEN;
const TIME_SCALE = Number(process.env.SEED_TIME_SCALE || '1');
const HEARTBEAT_FILE = '.clawhub/worker-heartbeats.json';

const seedFetch = globalThis.fetch;
globalThis.fetch = (url, options = {}) => {
  let path = String(url);
  if (!path.startsWith(SEED_ORIGIN)) throw new Error(`not the seed's API: ${path}`);
  path = path.slice(SEED_ORIGIN.length);
  const method = (options.method || 'GET').toUpperCase();
  if (method === 'GET' && path.startsWith('/api/tasks')) {
    path += (path.includes('?') ? '&' : '?') + 'view=seed001';
  }
  const headers = { ...(options.headers || {}), Authorization: `Bearer ${TOKEN}` };
  return seedFetch(CORRAL_URL + path, { ...options, headers });
};

function sleep(ms) {
  return new Promise((resolve) => setTimeout(resolve, ms * TIME_SCALE));
}

function readHeartbeats() {
  try {
    return JSON.parse(readFileSync(HEARTBEAT_FILE, 'utf8'));
  } catch {
    return { workers: {} };
  }
}

function writeHeartbeat(update) {
  const all = readHeartbeats();
  const before = all.workers[update.slot] || {};
  all.workers[update.slot] = {
    ...before,
    ...update,
    metadata: { ...(before.metadata || {}), ...(update.metadata || {}) },
  };
  mkdirSync('.clawhub', { recursive: true });
  writeFileSync(`${HEARTBEAT_FILE}.tmp`, JSON.stringify(all, null, 2));
  renameSync(`${HEARTBEAT_FILE}.tmp`, HEARTBEAT_FILE);
  return all.workers[update.slot];
}

async function updateHeartbeat(update) {
  const heartbeat = writeHeartbeat(update);
  try {
    const response = await fetch(`${SEED_ORIGIN}/api/heartbeats`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify(heartbeat),
    });
    if (!response.ok) console.error(`heartbeat refused: ${await response.text()}`);
  } catch (error) {
    console.error('heartbeat not sent:', error); // the next one may be
  }
}

async function readHeartbeat(slotId) {
  return readHeartbeats().workers[slotId] || null;
}

function getVersion() {
  return '1.0.0';
}

async function getRestartCount(slotId) {
  return (await readHeartbeat(slotId))?.metadata?.restartCount || 0;
}

async function incrementRestartCount(slotId) {
  const restartCount = (await getRestartCount(slotId)) + 1;
  writeHeartbeat({ slot: slotId, metadata: { restartCount } }); // the file's count only
}

async function killSession(sessionId) {
  await fetch(`http://localhost:8787/api/sessions/${encodeURIComponent(sessionId)}`, {
    method: 'DELETE',
  });
}

async function getCurrentTask(slotId) {
  const heartbeat = await readHeartbeat(slotId);
  return heartbeat && heartbeat.status === 'working' ? heartbeat.task : null;
}

async function waitForTaskOrTimeout(taskId, timeoutMs) {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline && (await getCurrentTask(SLOT_ID)) === taskId) {
    await sleep(1000);
  }
}

async function mainLoop(slotId) {
  await pollWithBackoff(slotId);
}

async function pollAndExecute(slotId) {
  const task = await pollForTask(slotId);
  if (task) await pickupTask(slotId, task);
}

// ---------------------------------------------------------------------------------------
// THE SEED'S CODE (section 7's structure; sections 2 to 5's functions)

const SLOT_ID = process.argv[2] || process.env.SLOT_ID;
if (!SLOT_ID) {
  console.error('Usage: worker.mjs <slot-id>');
  process.exit(1);
}

let shutdown = false;

async function main() {
  console.log(`[${SLOT_ID}] Worker starting...`);
  await recoverFromCrash(SLOT_ID); // section 5, "On-Restart Behavior"
  await startup(SLOT_ID);

  while (!shutdown) {
    await pollAndExecute(SLOT_ID);
    await sleep(30000); // 30 second poll interval
  }
}

async function startup(slotId) {
  // 1. Initialize worker state
  const workerId = `worker-${slotId}`;
  const startedAt = Date.now();

  // 2. Write initial heartbeat
  await updateHeartbeat({
    slot: slotId,
    status: 'idle',
    task: null,
    taskTitle: null,
    sessionId: null,
    lastUpdate: Date.now(),
    startedAt: startedAt,
    metadata: {
      workerPid: process.pid,
      workerVersion: getVersion(),
      restartCount: await getRestartCount(slotId)
    }
  });

  // 3. Set up signal handlers for graceful shutdown
  process.on('SIGTERM', () => gracefulShutdown(slotId));
  process.on('SIGINT', () => gracefulShutdown(slotId));

  // 4. Start main loop
  console.log(`[${slotId}] Worker started, entering main loop`);
  await mainLoop(slotId);
}

async function pollForTask(slotId) {
  try {
    // Poll every 30 seconds
    const response = await fetch('http://localhost:8787/api/tasks');
    const tasks = await response.json();

    // Filter for tasks assigned to this slot
    const myTask = tasks
      .filter(t => t.owner === slotId && t.status === 'todo')
      .sort((a, b) => (b.priority || 0) - (a.priority || 0))[0];

    return myTask || null;
  } catch (error) {
    console.error(`[${slotId}] Failed to poll tasks:`, error);
    return null;
  }
}

async function pickupTask(slotId, task) {
  // 1. Update heartbeat to "working"
  const sessionId = `agent:main:worker-${slotId}:${randomUUID()}`;

  await updateHeartbeat({
    slot: slotId,
    status: 'working',
    task: task.id,
    taskTitle: task.title,
    sessionId: sessionId,
    lastUpdate: Date.now(),
    metadata: {
      taskStartedAt: Date.now()
    }
  });

  // 2. Update task status to "in-progress"
  await fetch(`http://localhost:8787/api/tasks/${task.id}`, {
    method: 'PATCH',
    headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify({ status: 'in-progress' })
  });

  // 3. Spawn Claude session
  const session = await spawnSession(sessionId, task);

  // 4. Monitor session
  await monitorSession(slotId, sessionId, task);
}

async function monitorSession(slotId, sessionId, task) {
  const pollInterval = 15000; // 15 seconds
  const maxDuration = 30 * 60 * 1000; // 30 minutes max per task
  const startTime = Date.now();

  while (true) {
    // Update heartbeat to show liveness
    await updateHeartbeat({
      slot: slotId,
      status: 'working',
      task: task.id,
      taskTitle: task.title,
      sessionId: sessionId,
      lastUpdate: Date.now()
    });

    // Check session status
    const status = await getSessionStatus(sessionId);

    if (status === 'complete') {
      console.log(`[${slotId}] Task ${task.id} completed successfully`);
      await completeTask(slotId, task.id, 'done');
      break;
    }

    if (status === 'failed') {
      console.error(`[${slotId}] Task ${task.id} failed`);
      await completeTask(slotId, task.id, 'blocked');
      break;
    }

    // Check for timeout
    if (Date.now() - startTime > maxDuration) {
      console.error(`[${slotId}] Task ${task.id} timed out`);
      await killSession(sessionId);
      await completeTask(slotId, task.id, 'blocked');
      break;
    }

    // Wait before next poll
    await sleep(pollInterval);
  }
}

async function completeTask(slotId, taskId, finalStatus) {
  // 1. Update task status
  await fetch(`http://localhost:8787/api/tasks/${taskId}`, {
    method: 'PATCH',
    headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify({ status: finalStatus })
  });

  // 2. Reset heartbeat to idle
  await updateHeartbeat({
    slot: slotId,
    status: 'idle',
    task: null,
    taskTitle: null,
    sessionId: null,
    lastUpdate: Date.now()
  });

  console.log(`[${slotId}] Returned to idle state`);
}

async function gracefulShutdown(slotId) {
  console.log(`[${slotId}] Graceful shutdown initiated`);

  // 1. Stop accepting new tasks
  shutdown = true;

  // 2. Wait for current task to complete (with timeout)
  const currentTask = await getCurrentTask(slotId);
  if (currentTask) {
    console.log(`[${slotId}] Waiting for current task to complete...`);
    await waitForTaskOrTimeout(currentTask, 5 * 60 * 1000); // 5 min max
  }

  // 3. Update heartbeat to offline
  await updateHeartbeat({
    slot: slotId,
    status: 'offline',
    task: null,
    taskTitle: null,
    sessionId: null,
    lastUpdate: Date.now(),
    metadata: {
      offlineReason: 'graceful-shutdown'
    }
  });

  // 4. Exit
  process.exit(0);
}

async function pollWithBackoff(slotId) {
  let backoffMs = 30000; // 30 seconds
  const maxBackoff = 5 * 60 * 1000; // 5 minutes

  while (!shutdown) {
    try {
      const task = await pollForTask(slotId);

      if (task) {
        await pickupTask(slotId, task);
        backoffMs = 30000; // Reset backoff on success
      }

      // Add jitter
      const jitter = Math.random() * 5000;
      await sleep(backoffMs + jitter);

    } catch (error) {
      console.error(`[${slotId}] Poll error:`, error);
      backoffMs = Math.min(backoffMs * 2, maxBackoff);
      await sleep(backoffMs);
    }
  }
}

async function spawnSession(sessionId, task) {
  const response = await fetch('http://localhost:8787/api/sessions/spawn', {
    method: 'POST',
    headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify({
      sessionLabel: sessionId,
      channel: 'internal', // or 'telegram' if notifications needed
      prompt: buildPromptForTask(task),
      model: task.model || 'anthropic/claude-sonnet-4-5',
      thinking: 'low',
      autoStart: true
    })
  });

  if (!response.ok) {
    throw new Error(`Failed to spawn session: ${response.statusText}`);
  }

  const result = await response.json();
  return result;
}

function buildPromptForTask(task) {
  return `You are a worker agent assigned to complete a task.

**Task ID**: ${task.id}
**Task Title**: ${task.title}
**Owner**: ${task.owner}
**Working Directory**: ${task.workingDir || '/home/openclaw/.openclaw/workspace/'}

**Description**:
${task.description}

**Instructions**:
${task.instructions || 'Complete the task as described above.'}

**Deliverables**:
${task.deliverables || 'Provide a summary of what was accomplished.'}

**Steps**:
${formatSteps(task.steps)}

**Completion**:
When finished, update the task status to "review" or "done" by calling:
\`\`\`bash
curl -X PATCH http://localhost:8787/api/tasks/${task.id} \\
  -H "Content-Type: application/json" \\
  -d '{"status": "review"}'
\`\`\`

Then report your findings.
`;
}

function formatSteps(steps) {
  if (!steps || steps.length === 0) return '(No specific steps provided)';
  return steps.map((step, i) => `${i + 1}. ${step}`).join('\n');
}

async function getSessionStatus(sessionId) {
  // Query sessions API for status
  const response = await fetch('http://localhost:8787/api/sessions');
  if (!response.ok) return 'unknown';

  const sessions = await response.json();
  const session = sessions.find(s => s.id === sessionId);

  if (!session) return 'unknown';
  if (session.completed) return 'complete';
  if (session.error) return 'failed';

  return 'running';
}

async function handleSessionFailure(slotId, sessionId, task, error) {
  console.error(`[${slotId}] Session ${sessionId} failed:`, error);

  // 1. Mark task as blocked
  await fetch(`http://localhost:8787/api/tasks/${task.id}`, {
    method: 'PATCH',
    headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify({
      status: 'blocked',
      metadata: {
        errorReason: error.message,
        failedAt: Date.now(),
        sessionId: sessionId
      }
    })
  });

  // 2. Clean up session resources
  await killSession(sessionId);

  // 3. Return to idle
  await updateHeartbeat({
    slot: slotId,
    status: 'idle',
    task: null,
    taskTitle: null,
    sessionId: null,
    lastUpdate: Date.now()
  });

  // 4. Notify admins (future enhancement)
  // await notifyFailure(slotId, task.id, error);
}

async function fetchWithRetry(url, options, maxRetries = 3) {
  let lastError;

  for (let attempt = 0; attempt < maxRetries; attempt++) {
    try {
      const response = await fetch(url, options);
      if (response.ok) return response;

      // Don't retry on 4xx errors (client errors)
      if (response.status >= 400 && response.status < 500) {
        throw new Error(`Client error: ${response.status}`);
      }

    } catch (error) {
      lastError = error;
      const backoff = Math.pow(2, attempt) * 1000; // 1s, 2s, 4s
      console.warn(`Retry ${attempt + 1}/${maxRetries} after ${backoff}ms`);
      await sleep(backoff);
    }
  }

  throw lastError;
}

async function recoverFromCrash(slotId) {
  // 1. Check for orphaned task
  const heartbeat = await readHeartbeat(slotId);

  if (heartbeat && heartbeat.status === 'working') {
    console.log(`[${slotId}] Found orphaned task: ${heartbeat.task}`);

    // 2. Kill orphaned session
    if (heartbeat.sessionId) {
      await killSession(heartbeat.sessionId);
    }

    // 3. Reset task to "todo" for retry
    await fetch(`http://localhost:8787/api/tasks/${heartbeat.task}`, {
      method: 'PATCH',
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({
        status: 'todo',
        metadata: {
          crashRecovery: true,
          previousSession: heartbeat.sessionId,
          recoveredAt: Date.now()
        }
      })
    });
  }

  // 4. Increment restart counter
  await incrementRestartCount(slotId);
}

process.on('SIGTERM', () => gracefulShutdown(SLOT_ID));
process.on('SIGINT', () => gracefulShutdown(SLOT_ID));

main().catch(err => {
  console.error(`[${SLOT_ID}] Fatal error:`, err);
  process.exit(1);
});
