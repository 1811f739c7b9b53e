#!/usr/bin/env node
'use strict';
/**
 * Run a strategy against a recorded game's messages, with no referee: a unit test of a decision.
 *
 *   craits replay messages REPLAY --seat S -o seat.jsonl
 *   node clients/js/offline.js seat.jsonl --strategy ./my_strategy.js     (prints the first difference)
 *
 * or in a test:
 *
 *   const { replayMessages } = require('./offline.js');
 *   const steps = await replayMessages(require('./my_strategy.js'), 'seat.jsonl');
 *   assert.notEqual(steps.at(57).chosen.text, '8H:clubs');
 *
 * Every message goes through the same dispatcher and protocol loading as a live game, in
 * order; the strategy's exceptions are thrown (a test should see them). The binary form
 * (--format binary) works too, without the recorded answers.
 */

const fs = require('node:fs');
const { parseArgs } = require('node:util');
const { Dispatcher, actionId, loadProtocol, loadStrategy } = require('./bot.js');

/** The items of a messages file, in order: { message } (a RefereeMessage) or { answer }, each with n. */
function readMessages(file, protocol = loadProtocol()) {
  const decode = protocol.Referee.service.Play.responseDeserialize;
  const data = fs.readFileSync(file);
  const items = [];
  if (data[0] === 0x7b) { // '{': JSON lines
    data.toString('utf8').split('\n').forEach((line, i) => {
      if (!line.trim()) return;
      let item;
      try {
        item = JSON.parse(line);
      } catch (err) {
        throw new Error(`${file}: line ${i + 1} is not a messages line: ${err.message}`);
      }
      if (item.from === 'referee') items.push({ n: item.n, message: decode(Buffer.from(item.bytes, 'base64')) });
      else if (item.from === 'bot' && !item.refused) items.push({ n: item.n, answer: item.answer });
    });
    return items;
  }
  let i = 0;
  while (i < data.length) {
    let size = 0;
    let shift = 0;
    for (;;) {
      if (i >= data.length || shift > 49) throw new Error(`${file}: cut short at byte ${i}: not a length-delimited messages file`);
      const byte = data[i++];
      size += (byte & 0x7f) * 2 ** shift;
      shift += 7;
      if (byte < 0x80) break;
    }
    if (i + size > data.length) throw new Error(`${file}: cut short at byte ${i}: not a length-delimited messages file`);
    items.push({ n: null, message: decode(data.subarray(i, i + size)) });
    i += size;
  }
  return items;
}

/** Feed the strategy every message of the file; resolves to the steps, one per request. */
async function replayMessages(strategy, file, protocol) {
  const dispatcher = new Dispatcher(strategy);
  const steps = [];
  for (const item of readMessages(file, protocol)) {
    if (item.answer) {
      const last = steps[steps.length - 1];
      if (last && last.recorded === null) last.recorded = Number(item.answer.action_id || 0);
      continue;
    }
    if (item.message.message !== 'decision') {
      await dispatcher.handle(item.message);
      continue;
    }
    const request = dispatcher.requestFor(item.message.decision);
    const answer = actionId(await strategy.choose(request), request);
    steps.push({
      n: item.n, request, answer, recorded: null,
      get chosen() { return request.legal_actions.find((a) => a.id === answer); },
      get same() { return this.recorded === null || this.recorded === answer; },
    });
  }
  steps.at = (n) => {
    const step = steps.find((s) => s.n === n);
    if (!step) throw new Error(`no request of decision ${n} in these messages`);
    return step;
  };
  steps.firstDifference = () => steps.find((s) => !s.same) || null;
  return steps;
}

async function main(argv) {
  const { values, positionals } = parseArgs({ args: argv, allowPositionals: true, options: { strategy: { type: 'string', default: 'random' } } });
  if (positionals.length !== 1) {
    process.stderr.write('usage: node offline.js MESSAGES_FILE [--strategy random|heuristic|./my_strategy.js]\n');
    return 2;
  }
  const steps = await replayMessages(loadStrategy(values.strategy), positionals[0]);
  const diff = steps.firstDifference();
  const recorded = steps.filter((s) => s.recorded !== null).length;
  process.stdout.write(`${steps.length} requests answered, ${recorded} with a recorded answer\n`);
  if (!diff) {
    process.stdout.write('every answer is the recorded one\n');
    return 0;
  }
  const was = diff.request.legal_actions.find((a) => a.id === diff.recorded);
  process.stdout.write(`first difference at decision ${diff.n}: recorded ${was ? was.text : diff.recorded} (${diff.recorded}), now ${diff.chosen.text} (${diff.answer})\n`);
  return 1;
}

module.exports = { readMessages, replayMessages };

if (require.main === module) {
  main(process.argv.slice(2)).then((code) => process.exit(code), (err) => {
    process.stderr.write(`offline.js: ${err && err.message ? err.message : err}\n`);
    process.exit(1);
  });
}
