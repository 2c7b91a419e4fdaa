// Drives a swarmcore AG-UI server with the official TypeScript client (@ag-ui/client).
//
// usage: node drive.mjs '<plan as JSON>'
// The plan: {url, task, token?, forwardedProps?, state?, answers?, abortOn?}
//   answers: one resume per interrupt the runs end on, in order: a payload
//            ({"approved": true}...) or {"cancelled": true}.
//   abortOn: an event type; the client aborts its run when that event arrives.
//   holdBeforeResume: before each resume, print {"holding": <pending interrupts>} and
//            wait for a line on stdin (the test restarts the server meanwhile).
// Prints one JSON object: every run's events (as the client received and verified
// them), its error if it failed, and the client's messages, state and interrupts.
import { HttpAgent } from "@ag-ui/client";
import { createInterface } from "node:readline";

let lines; // stdin's lines, read only by a plan that holds before resuming

const plan = JSON.parse(process.argv[2]);
const headers = plan.token ? { Authorization: `Bearer ${plan.token}` } : {};
const agent = new HttpAgent({ url: plan.url, headers, initialState: plan.state });
agent.addMessage({ id: "user-1", role: "user", content: plan.task });
const answers = [...(plan.answers ?? [])];
const runs = [];
let parameters = { forwardedProps: plan.forwardedProps };

for (;;) {
  const run = { events: [] };
  runs.push(run);
  let aborted = false;
  const subscriber = {
    onEvent({ event }) {
      run.events.push(event);
      if (plan.abortOn && event.type === plan.abortOn && !aborted) {
        aborted = true;
        setTimeout(() => agent.abortRun(), 0);
      }
    },
    onRunFailed({ error }) {
      run.failed = String(error?.message ?? error);
    },
  };
  try {
    const { result } = await agent.runAgent(parameters, subscriber);
    run.result = result ?? null;
  } catch (error) {
    run.error = String(error?.message ?? error);
  }
  run.aborted = aborted;
  const interrupts = agent.pendingInterrupts ?? [];
  if (aborted || run.error || interrupts.length === 0 || answers.length === 0) break;
  const answer = answers.shift();
  if (plan.holdBeforeResume) {
    lines ??= createInterface({ input: process.stdin });
    console.log(JSON.stringify({ holding: interrupts }));
    await new Promise((resolve) => lines.once("line", resolve));
  }
  parameters = {
    resume: interrupts.map((interrupt) =>
      answer.cancelled
        ? { interruptId: interrupt.id, status: "cancelled" }
        : { interruptId: interrupt.id, status: "resolved", payload: answer },
    ),
  };
}

lines?.close();
console.log(
  JSON.stringify({
    runs,
    messages: agent.messages,
    state: agent.state,
    pendingInterrupts: agent.pendingInterrupts ?? [],
  }),
);
