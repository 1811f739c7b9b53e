'use strict';
// Reads base64 RefereeMessage lines on stdin, decodes each exactly as the JS bot's
// gRPC stream does, runs it through the bot's Dispatcher with the named strategy,
// and prints the chosen action ids as one JSON array. Used by test_bots_js.py.
const path = require('node:path');
const readline = require('node:readline');

const bot = require(path.resolve(__dirname, '..', '..', 'clients', 'js', 'bot.js'));

async function main() {
  const strategy = bot.loadStrategy(process.argv[2]);
  const { Referee } = bot.loadProtocol();
  const decode = Referee.service.Play.responseDeserialize;
  const dispatcher = new bot.Dispatcher(strategy);
  const chosen = [];
  for await (const line of readline.createInterface({ input: process.stdin })) {
    if (!line.trim()) continue;
    const reply = await dispatcher.handle(decode(Buffer.from(line, 'base64')));
    if (reply) chosen.push(reply.answer.action_id);
  }
  process.stdout.write(JSON.stringify({ chosen, fallbacks: dispatcher.fallbacks }));
}

main().catch((err) => { process.stderr.write(String(err && err.stack)); process.exit(1); });
