// The OpenAI Agents SDK's E2B sandbox client (@openai/agents-extensions,
// pinned), unchanged, runs one task against a real paddockd: a sandbox
// agent whose model is the framework's own scripted model (no model API
// is reached: this machine has none) asks for one shell command; the
// framework makes the sandbox through E2B's SDK, runs the command in it
// (a Paddock box) and hands the output back to the model. Run by
// testbed/e2e's TestE2BSDK with the environment sdk.test.mjs has.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { run } from '@openai/agents-core'
import { SandboxAgent, shell } from '@openai/agents-core/sandbox'
import { ScriptedModel, modelResponse, modelResponder, functionCall, assistantMessage } from '@openai/agents-core/testing'
import { E2BSandboxClient } from '@openai/agents-extensions/sandbox/e2b'

test('an agent runs a task in a Paddock box through the E2B sandbox client', async () => {
  const model = new ScriptedModel([
    modelResponse([functionCall('exec_command', { cmd: 'echo "made by an agent on $(uname -s)" > answer.txt && cat answer.txt && whoami' }, { callId: 'call-1' })]),
    modelResponder((call) => {
      // What the tool gave back is in the model's input: the command's
      // output, from the box.
      const out = JSON.stringify(call.request.input)
      assert.match(out, /made by an agent on Linux/)
      assert.match(out, /paddock/)
      return [assistantMessage('done: made by an agent on Linux')]
    }),
  ])
  const agent = new SandboxAgent({ name: 'worker', instructions: 'Do the task in the sandbox.', model, capabilities: [shell()] })
  const result = await run(agent, 'Write a greeting to answer.txt and show it.', {
    sandbox: { client: new E2BSandboxClient({ timeout: 600 }) },
  })
  assert.equal(result.finalOutput, 'done: made by an agent on Linux')
  model.assertComplete()
})
