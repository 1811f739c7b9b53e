'use strict';
// Unit tests of the JavaScript bot: `npm test` (node --test test/).
const test = require('node:test');
const assert = require('node:assert/strict');

const { Dispatcher, actionId, connection, loadProtocol, parseCommandLine, EXIT } = require('../bot.js');
const heuristic = require('../strategies/heuristic.js');

const card = (text, rank, suit) => ({ text, rank, suit });
const play = (id, c, { suit = 'SUIT_UNSPECIFIED', announce = false } = {}) => ({
  id, text: c.text + (announce ? '+one-card' : ''), kind: 'ACTION_KIND_PLAY_CARD', card: c, suit, announce,
});
const draw = { id: 0, text: 'draw', kind: 'ACTION_KIND_DRAW', card: null, suit: 'SUIT_UNSPECIFIED', announce: false };

const H5 = card('5H', 'RANK_FIVE', 'SUIT_HEARTS');
const HJ = card('JH', 'RANK_JACK', 'SUIT_HEARTS');
const S8 = card('8S', 'RANK_EIGHT', 'SUIT_SPADES');
const C2 = card('2C', 'RANK_TWO', 'SUIT_CLUBS');
const SA = card('AS', 'RANK_ACE', 'SUIT_SPADES');
const CK = card('KC', 'RANK_KING', 'SUIT_CLUBS');
const CQ = card('QC', 'RANK_QUEEN', 'SUIT_CLUBS');

function request(hand, legal, { handSizes = [hand.length, 5], seat = 0 } = {}) {
  return {
    observation: { seat, direction: 1, hand, hand_sizes: handSizes },
    legal_actions: legal, hand, kind: 'DECISION_KIND_PLAY',
  };
}

test('choose may return a legal action or its id, nothing else', () => {
  const req = request([H5], [draw, play(100, H5)]);
  assert.equal(actionId(req.legal_actions[1], req), 100);
  assert.equal(actionId(100, req), 100);
  assert.throws(() => actionId(7, req), /not a legal action id; legal: 0 \(draw\), 100 \(5H\)/);
  assert.throws(() => actionId('draw', req), /return one of request.legal_actions/);
});

test('the dispatcher rebuilds the whole hand history from increments, also for a repeated request', async () => {
  const seen = [];
  const dispatcher = new Dispatcher({ choose(r) { seen.push(r.observation.history.map((e) => e.value)); return 0; } });
  const decision = (hand, start, values, id) => ({
    message: 'decision',
    decision: {
      game_id: 'g', decision_id: String(id), legal_actions: [draw],
      observation: { hand_number: hand, history_start: start, history: values.map((value) => ({ value })), hand: [] },
    },
  });
  await dispatcher.handle(decision(1, 0, ['a', 'b'], 1));
  await dispatcher.handle(decision(1, 2, ['c', 'd'], 2));
  await dispatcher.handle(decision(1, 2, ['c', 'd'], 2)); // repeated: starts where the original did
  await dispatcher.handle(decision(2, 0, ['x'], 3)); // a new hand starts afresh
  assert.deepEqual(seen, [['a', 'b'], ['a', 'b', 'c', 'd'], ['a', 'b', 'c', 'd'], ['x']]);
});

test('a throwing strategy is answered with the first legal action, its log naming the decision to rerun', async () => {
  let seen = null;
  const dispatcher = new Dispatcher({ choose(r) { seen = r; throw new Error('on purpose'); } });
  const written = [];
  const write = process.stderr.write;
  process.stderr.write = (text) => written.push(String(text));
  let reply;
  try {
    reply = await dispatcher.handle({
      message: 'decision',
      decision: {
        game_id: 'g', decision_id: '9007199254740993', decision_number: 57, legal_actions: [draw, play(100, H5)],
        observation: { hand_number: 1, history_start: 0, history: [], hand: [H5] },
      },
    });
  } finally {
    process.stderr.write = write;
  }
  assert.equal(reply.answer.action_id, 0);
  assert.equal(reply.answer.decision_id, '9007199254740993', '64-bit ids are echoed exactly');
  assert.equal(dispatcher.fallbacks, 1);
  assert.equal(seen.decision_number, 57);
  // the number `craits replay rerun --from N` takes, then the wire's id
  assert.match(written.join(''), /YOUR BOT FAILED \(game g, decision 57 \(id 9007199254740993\)\): choose\(\) failed: Error: on purpose/);
  assert.equal(dispatcher.decisionWords('g', '9007199254740993'), 'decision 57 (id 9007199254740993)');
  assert.equal(dispatcher.decisionWords('g', '5'), 'decision id 5', 'a decision not the last asked: its id only');
});

test('a kept bot prints the stack again in each game (its output is shown game by game)', async () => {
  const dispatcher = new Dispatcher({ choose() { throw new Error('on purpose'); } });
  const written = [];
  const write = process.stderr.write;
  process.stderr.write = (text) => written.push(String(text));
  try {
    for (const [game, id] of [['g1', '1'], ['g1', '2'], ['g2', '3']]) {
      await dispatcher.handle({
        message: 'decision',
        decision: { game_id: game, decision_id: id, legal_actions: [draw], observation: { hand_number: 1, history: [], hand: [] } },
      });
    }
  } finally {
    process.stderr.write = write;
  }
  const text = written.join('');
  assert.equal(text.split('YOUR BOT FAILED').length - 1, 2, text);
  assert.match(text, /YOUR BOT FAILED \(game g2/);
  assert.match(text, /failure 2 at this place; its stack was printed the first time in this game/);
});

test('heuristic: announces "one card" whenever offered', () => {
  const legal = [play(100, H5), play(101, H5, { announce: true })];
  assert.equal(heuristic.choose(request([H5, CK], legal)).id, 101);
});

test('heuristic: keeps a wild 8 while another card is legal, names its longest suit when not', () => {
  const wild = (suit, id) => play(id, S8, { suit });
  const both = [play(100, HJ), wild('SUIT_CLUBS', 200), wild('SUIT_SPADES', 201)];
  assert.equal(heuristic.choose(request([HJ, S8, CK, CQ], both)).text, 'JH');
  const onlyWild = [wild('SUIT_HEARTS', 199), wild('SUIT_CLUBS', 200), wild('SUIT_SPADES', 201)];
  assert.equal(heuristic.choose(request([S8, CK, CQ, HJ], onlyWild)).id, 200);
});

test('heuristic: answers a count with a 2 before an ace', () => {
  assert.equal(heuristic.choose(request([SA, C2, CK], [draw, play(50, SA), play(60, C2)])).text, '2C');
});

test('the protocol loads with enums as names and field names as in the .proto', () => {
  const { Referee, protocolVersion } = loadProtocol();
  assert.equal(protocolVersion, 1);
  const decode = Referee.service.Play.responseDeserialize;
  const encode = Referee.service.Play.responseSerialize;
  const msg = decode(encode({ error: { code: 'ERROR_CODE_TIMEOUT', decision_id: '12345678901234567' } }));
  assert.equal(msg.message, 'error');
  assert.equal(msg.error.code, 'ERROR_CODE_TIMEOUT');
  assert.equal(msg.error.decision_id, '12345678901234567');
});

test('command line: flags, then environment, then defaults; mistakes are usage errors', () => {
  const env = { CRAITS_SERVER: 'h:1', CRAITS_TOKEN: 't', CRAITS_BOT_NAME: 'n' };
  const fromEnv = parseCommandLine(['--strategy', 'random'], env);
  assert.deepEqual([fromEnv.server, fromEnv.token, fromEnv.name], ['h:1', 't', 'n']);
  const fromFlags = parseCommandLine(['--strategy', 'random', '--server', 'x:2', '--token', 'u'], env);
  assert.deepEqual([fromFlags.server, fromFlags.token], ['x:2', 'u']);
  assert.equal(parseCommandLine(['--strategy', 'random'], {}).server, '127.0.0.1:50051');
  assert.throws(() => parseCommandLine([], {}), /--strategy is required/);
  assert.throws(() => parseCommandLine(['--strategy', 'random', '--server', 'nope'], {}), /HOST:PORT/);
  assert.throws(() => parseCommandLine(['--bogus'], {}), /bogus/);
  assert.equal(EXIT.REFUSED, 3);
});

test('TLS: grpcs://, CRAITS_TLS=1 or a CA file ask for it; a CA file that cannot be read is a usage error', () => {
  assert.equal(connection('127.0.0.1:50051').tls, false);
  assert.deepEqual(Object.keys(connection('grpcs://r:1')).sort(), ['credentials', 'target', 'tls']);
  assert.equal(connection('grpcs://r:1').target, 'r:1');
  assert.equal(connection('grpcs://r:1').tls, true);
  assert.equal(connection('r:1', { tls: true }).tls, true);
  const options = parseCommandLine(['--strategy', 'random'], { CRAITS_SERVER: 'grpcs://r:1', CRAITS_TLS: '1' });
  assert.equal(options.tls, true);
  assert.equal(parseCommandLine(['--strategy', 'random'], { CRAITS_TLS: '0' }).tls, false);
  assert.throws(() => parseCommandLine(['--strategy', 'random', '--tls-ca', '/no/such.pem'], {}), /--tls-ca \/no\/such.pem: cannot read it/);
  assert.throws(() => parseCommandLine(['--strategy', 'random'], { CRAITS_TLS_CA: __filename }), /not a PEM certificate/);
});

test('a strategy that cannot load says why, where, and exits 2 without a stack', () => {
  const fs = require('node:fs');
  const os = require('node:os');
  const path = require('node:path');
  const { spawnSync } = require('node:child_process');
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'craits-strategy-'));
  const strategies = {
    'broken.js': "module.exports = {\n  choose(request) {\n    return 0\n  ,\n};\n",
    'needs.js': "require('no-such-package-here');\nmodule.exports = { choose() { return 0; } };\n",
    'throws.js': "throw new Error('on purpose at load');\n",
    'function.js': 'module.exports = function choose(request) { return 0; };\n',
  };
  for (const [name, code] of Object.entries(strategies)) fs.writeFileSync(path.join(dir, name), code);
  const run = (name) => spawnSync(process.execPath, [path.join(__dirname, '..', 'bot.js'), '--strategy', name],
    { cwd: dir, encoding: 'utf8', timeout: 30000 });
  try {
    const expected = {
      'broken.js': /--strategy broken\.js: loading .*broken\.js failed: SyntaxError: .* at .*broken\.js:5/,
      'needs.js': /Cannot find module 'no-such-package-here', required by .*needs\.js/,
      'throws.js': /failed: Error: on purpose at load .*throws\.js:1/,
      'absent.js': /--strategy absent\.js: no such strategy/,
      'function.js': /must export an object with a function choose\(request\): module\.exports = \{ choose\(request\)/,
    };
    for (const [name, message] of Object.entries(expected)) {
      const done = run(name);
      assert.equal(done.status, EXIT.USAGE, `${name}: ${done.stderr}`);
      assert.match(done.stderr, message);
      if (name !== 'absent.js') assert.doesNotMatch(done.stderr, /no such strategy/);
      assert.doesNotMatch(done.stderr, /^\s+at /m, `${name}: a stack trace: ${done.stderr}`);
    }
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

test('a strategy written as an ES module (export default) loads where Node can require it, else says why', () => {
  const fs = require('node:fs');
  const os = require('node:os');
  const path = require('node:path');
  const { loadStrategy } = require('../bot.js');
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'craits-strategy-'));
  const file = path.join(dir, 'esm.js');
  fs.writeFileSync(file, "export default { name: 'esm-bot', choose(request) { return 0; } };\n");
  try {
    let strategy;
    try {
      strategy = loadStrategy(file);
    } catch (err) { // a Node that cannot require an ES module: the load error names the file
      assert.ok(!process.features.require_module, `this Node requires ES modules, yet: ${err.message}`);
      assert.match(err.message, /esm\.js/);
      return;
    }
    assert.equal(typeof strategy.choose, 'function');
    assert.equal(strategy.name, 'esm-bot');
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

test('a token refused after it was welcomed ends the bot with 0 (its games are over); a new one with 3; '
  + 'one withdrawn on the stream that welcomed it with 3', () => {
  const grpc = require('@grpc/grpc-js');
  const { Runner } = require('../bot.js');
  const protocol = loadProtocol();
  const strategy = { choose: () => 0 };
  const refused = { code: grpc.status.UNAUTHENTICATED, details: 'unknown token' };
  const fatal = { code: 'ERROR_CODE_UNAUTHENTICATED', message: 'unknown token', fatal: true };
  assert.equal(new Runner(strategy, { protocol }).ended(refused, fatal), EXIT.REFUSED);
  const back = new Runner(strategy, { protocol });
  back.onWelcome({ bot_name: 'me', protocol_version: 1, server_version: 'test', resumed: false });
  const revoked = { code: 'ERROR_CODE_UNAUTHENTICATED', message: 'your token was revoked', fatal: true };
  assert.equal(back.ended(refused, revoked), EXIT.REFUSED); // (on the stream that welcomed it)
  back.welcomed = false; // (a new stream, as play() starts each)
  assert.equal(back.ended(refused, fatal), EXIT.OK);
});

/**
 * A scripted referee on a frames socket (docs/protocol.md, "Frames on the sandbox's socket"):
 * `script(conn)` reads the bot's messages with conn.next() (null: its END frame; undefined: the
 * connection closed) and sends with conn.send(message) and conn.end(status, details).
 */
async function framesReferee(script) {
  const fs = require('node:fs');
  const net = require('node:net');
  const os = require('node:os');
  const path = require('node:path');
  const { frame } = require('../bot.js');
  const Play = loadProtocol().Referee.service.Play;
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'craits-frames-'));
  const socketPath = path.join(dir, 'frames.sock');
  const done = [];
  const server = net.createServer((socket) => {
    let buffer = Buffer.alloc(0);
    const frames = [];
    let wake = null;
    let closed = false;
    socket.on('data', (data) => {
      buffer = Buffer.concat([buffer, data]);
      while (buffer.length >= 5 && buffer.length >= 5 + buffer.readUInt32BE(1)) {
        const size = buffer.readUInt32BE(1);
        frames.push(buffer[0] === 1 ? null : Play.requestDeserialize(buffer.subarray(5, 5 + size)));
        buffer = buffer.subarray(5 + size);
      }
      if (wake) wake();
    });
    socket.on('close', () => { closed = true; if (wake) wake(); });
    const conn = {
      async next() {
        while (!frames.length && !closed) await new Promise((resolve) => { wake = resolve; });
        return frames.length ? frames.shift() : undefined;
      },
      send: (message) => socket.write(frame(0, Play.responseSerialize(message))),
      end: (status, details = '') => socket.end(frame(1, Buffer.from(`${status}\n${details}`))),
      drop: () => socket.destroy(),
    };
    done.push(script(conn));
  });
  await new Promise((resolve) => server.listen(socketPath, resolve));
  return {
    socketPath,
    async close() {
      const results = await Promise.all(done);
      server.close();
      fs.rmSync(dir, { recursive: true, force: true });
      return results;
    },
  };
}

const DECISION = {
  game_id: 'g', decision_id: '9007199254740993', legal_actions: [draw],
  observation: { hand_number: 1, history_start: 0, history: [], hand: [] },
};

test('frames (CRAITS_FRAMED_SOCKET): Hello, answers, the referee\'s END frame; the same exit codes as gRPC', async () => {
  const { Runner } = require('../bot.js');
  const protocol = loadProtocol();
  const strategy = { name: 'framed', choose: (r) => r.legal_actions[0] };
  const run = async (script, options = {}) => {
    const referee = await framesReferee(script);
    const runner = new Runner(strategy, { protocol, token: 'tok', reconnectS: 0, framedSocket: referee.socketPath, ...options });
    const code = await runner.play();
    return { code, said: await referee.close(), runner };
  };

  const played = await run(async (conn) => {
    const hello = await conn.next();
    conn.send({ welcome: { protocol_version: 1, server_version: 'script', bot_name: hello.hello.name } });
    conn.send({ decision: DECISION });
    const answer = await conn.next();
    conn.send({ game_end: { game_id: 'g' } });
    conn.end('OK');
    return { hello: hello.hello, answer: answer.answer };
  });
  assert.equal(played.code, EXIT.OK);
  const [{ hello, answer }] = played.said;
  assert.deepEqual([hello.token, hello.name, hello.protocol_version], ['tok', 'framed', 1]);
  assert.deepEqual([answer.game_id, answer.decision_id, answer.action_id], ['g', '9007199254740993', 0]);
  assert.equal(played.runner.dispatcher.gamesEnded, 1);

  const refused = await run(async (conn) => {
    await conn.next();
    conn.send({ error: { code: 'ERROR_CODE_UNAUTHENTICATED', message: 'unknown token', fatal: true } });
    conn.end('UNAUTHENTICATED', 'unknown token');
  });
  assert.equal(refused.code, EXIT.REFUSED);

  const lost = await run(async (conn) => { await conn.next(); conn.drop(); }); // no END frame: lost, as a broken call
  assert.equal(lost.code, EXIT.UNREACHABLE);
  assert.match(lost.runner.lastFailure, /without ending the stream \(UNAVAILABLE\)/);

  const absent = new Runner(strategy, { protocol, reconnectS: 0, framedSocket: '/nonexistent/frames.sock' });
  assert.equal(await absent.play(), EXIT.UNREACHABLE);
  assert.match(absent.lastFailure, /cannot connect to \/nonexistent\/frames\.sock/);

  const tls = new Runner(strategy, { protocol, server: 'grpcs://r:1', framedSocket: '/run/craits/frames.sock' });
  assert.equal(tls.framedSocket, '', 'a bot told to use TLS never takes a plain-text side door');
});

test('frames: a stopped bot (SIGTERM) sends an empty END frame, reads the referee\'s END, and exits 0', async () => {
  const { Runner } = require('../bot.js');
  let runner;
  const referee = await framesReferee(async (conn) => {
    await conn.next();
    conn.send({ welcome: { protocol_version: 1 } });
    conn.send({ decision: DECISION });
    await conn.next(); // its answer
    runner.stop(EXIT.OK); // what SIGTERM does
    const leave = await conn.next();
    conn.end('OK', 'the bot closed the stream (a clean exit)');
    return leave;
  });
  runner = new Runner({ choose: () => 0 }, { protocol: loadProtocol(), reconnectS: 0, framedSocket: referee.socketPath });
  assert.equal(await runner.play(), EXIT.OK);
  assert.deepEqual(await referee.close(), [null], 'the bot\'s END frame, before the connection closed');
});
