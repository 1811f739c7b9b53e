#!/usr/bin/env node
'use strict';
/**
 * A Craits Arena bot for Node.js.
 *
 *   node clients/js/bot.js --strategy random|heuristic|./my_strategy.js
 *        [--server HOST:PORT|grpcs://HOST:PORT] [--tls-ca FILE] [--token T] [--name N] [--proto FILE] [-v|-q]
 *
 * It loads the protocol from proto/craits/v1/referee.proto at run time (no code
 * generation), says Hello, answers every DecisionRequest with the strategy's
 * choice, logs the referee's errors one line each on stderr, reconnects with
 * backoff when the connection drops, and exits with the same codes as the
 * Python kit: 0 done (or SIGTERM), 1 unexpected end, 2 usage, 3 refused (token
 * or protocol version, or a TLS certificate it does not trust), 4 no referee for the
 * whole reconnect window, 130 Ctrl-C. Over TLS (grpcs://, CRAITS_TLS=1 or CRAITS_TLS_CA)
 * it never falls back to plain text. Launched in the referee's sandbox (CRAITS_FRAMED_SOCKET
 * set), it speaks the same messages as frames on that Unix socket instead of gRPC
 * (docs/protocol.md, "Frames on the sandbox's socket"): a third of the CPU per decision.
 *
 * Messages are plain objects with the .proto's own field names (snake_case:
 * legal_actions, decision_id), enums as their names ('RANK_EIGHT',
 * 'DECISION_KIND_ANSWER_COUNT'), and 64-bit integers (decision_id, totals,
 * event values, seed) as decimal strings so they are never rounded.
 */

const { EventEmitter } = require('node:events');
const fs = require('node:fs');
const net = require('node:net');
const path = require('node:path');
const { parseArgs } = require('node:util');
const grpc = require('@grpc/grpc-js');
const protoLoader = require('@grpc/proto-loader');

const EXIT = Object.freeze({ OK: 0, FAILED: 1, USAGE: 2, REFUSED: 3, UNREACHABLE: 4, INTERRUPTED: 130 });
const DEFAULT_SERVER = '127.0.0.1:50051';
const DEFAULT_RECONNECT_S = 30;
const DEFAULT_PROTO = path.resolve(__dirname, '..', '..', 'proto', 'craits', 'v1', 'referee.proto');
const BUILTIN_STRATEGIES = ['random', 'heuristic'];
const LOADER_OPTIONS = Object.freeze({
  keepCase: true, // field names exactly as in the .proto, as in every other language's docs
  enums: String, // 'SUIT_HEARTS', not 3: readable, and immune to renumbering mistakes
  longs: String, // uint64/int64 as decimal strings: decision ids are echoed back exactly
  defaults: true, // absent fields read as their zero value ([], 0, false, 'SUIT_UNSPECIFIED')
  oneofs: true, // msg.message names which field of a oneof is set ('decision', 'error', ...)
});

// Statuses after which the same token may simply connect again (see the Python kit).
// RESOURCE_EXHAUSTED is not one: the referee ends a stream with it for a flood or an
// oversize message, which reconnecting would only repeat (docs/protocol.md).
const RETRYABLE = new Set([
  grpc.status.UNAVAILABLE, grpc.status.INTERNAL, grpc.status.UNKNOWN,
  grpc.status.ABORTED, grpc.status.CANCELLED,
]);
const REFUSED = new Set([
  grpc.status.UNAUTHENTICATED, grpc.status.FAILED_PRECONDITION,
  grpc.status.PERMISSION_DENIED, grpc.status.INVALID_ARGUMENT,
]);
const REFUSING_ERRORS = new Set(['ERROR_CODE_UNAUTHENTICATED', 'ERROR_CODE_PROTOCOL_VERSION']);
const HINTS = {
  [grpc.status.UNAUTHENTICATED]: 'check the token (--token or CRAITS_TOKEN)',
  [grpc.status.FAILED_PRECONDITION]: 'this bot speaks protocol version 1; update it or the referee',
};
const TLS_SCHEME = 'grpcs://';
const STATUS_NAMES = Object.fromEntries(Object.entries(grpc.status).map(([k, v]) => [v, k]));
const FRAMED_SOCKET_ENV = 'CRAITS_FRAMED_SOCKET';
const LEAVE_MS = 5000; // how long a stopping bot waits for the referee to end its half-closed stream

// ---------------------------------------------------------------------------- logging

const LEVELS = { debug: 10, info: 20, warn: 30, error: 40 };
let logLevel = LEVELS.info;

function log(level, message) {
  if (LEVELS[level] < logLevel) return;
  const time = new Date().toTimeString().slice(0, 8);
  process.stderr.write(`${time} craits_bot_js ${level.toUpperCase()} ${message}\n`);
}

// ---------------------------------------------------------------------------- protocol

/** Load the protocol; returns { Referee (client constructor), protocolVersion }. */
function loadProtocol(protoPath = DEFAULT_PROTO) {
  const definition = protoLoader.loadSync(protoPath, LOADER_OPTIONS);
  const pkg = grpc.loadPackageDefinition(definition).craits.v1;
  const versions = definition['craits.v1.ProtocolVersion'].type.value;
  const current = versions.find((v) => v.name === 'PROTOCOL_VERSION_CURRENT');
  return { Referee: pkg.Referee, protocolVersion: current.number };
}

// ---------------------------------------------------------------------------- dispatcher

/**
 * Routes referee messages to a strategy and turns its choices into answers; no I/O.
 * The strategy's own mistakes never cost the game: an exception or an unusable
 * return value is logged and answered with the first legal action.
 */
class Dispatcher {
  constructor(strategy) {
    this.strategy = strategy;
    this.games = new Map(); // game_id -> { start, handNumber, history }
    this.gamesEnded = 0;
    this.decisions = 0;
    this.fallbacks = 0;
    this.failures = new Map(); // how often choose() failed at each place of each game (its stack printed once a game)
  }

  /** Handle one RefereeMessage; resolves to the BotMessage to send, or null. */
  async handle(msg) {
    switch (msg.message) {
      case 'decision':
        return this.decide(msg.decision);
      case 'game_start':
        this.games.set(msg.game_start.game_id, { start: msg.game_start, handNumber: 0, history: [] });
        this.hook('onGameStart', msg.game_start);
        break;
      case 'hand_start': {
        const game = this.game(msg.hand_start.game_id);
        game.handNumber = msg.hand_start.hand_number;
        game.history = [];
        this.hook('onHandStart', msg.hand_start);
        break;
      }
      case 'hand_end':
        this.hook('onHandEnd', msg.hand_end);
        break;
      case 'game_end':
        this.games.delete(msg.game_end.game_id);
        for (const key of this.failures.keys()) {
          if (key.startsWith(`${msg.game_end.game_id}\u0000`)) this.failures.delete(key);
        }
        this.gamesEnded += 1;
        this.hook('onGameEnd', msg.game_end);
        break;
      case 'error':
        this.hook('onError', msg.error);
        break;
      default:
        break;
    }
    return null;
  }

  /** 'decision 57 (id 48213)' for a game's last request, else 'decision id 48213' (a referee Error names the id only). */
  decisionWords(gameId, decisionId) {
    const game = this.games.get(gameId);
    return decisionWords(game && game.asked && game.asked[0] === decisionId ? game.asked[1] : 0, decisionId);
  }

  game(gameId) {
    if (!this.games.has(gameId)) this.games.set(gameId, { start: null, handNumber: 0, history: [] });
    return this.games.get(gameId);
  }

  /**
   * The request a strategy sees: the observation's history made whole for the hand
   * (the referee sends only the events since its previous request, from history_start).
   */
  requestFor(msg) {
    const game = this.game(msg.game_id);
    const obs = msg.observation;
    if (obs.hand_number !== game.handNumber) {
      game.handNumber = obs.hand_number;
      game.history = [];
    }
    let start = obs.history_start;
    if (start > game.history.length) {
      log('warn', `game ${msg.game_id}: history jumps from ${game.history.length} to ${start} events (missed messages?)`);
      start = game.history.length;
    }
    game.history = game.history.slice(0, start).concat(obs.history);
    obs.history = game.history.slice();
    obs.history_start = 0;
    game.asked = [msg.decision_id, msg.decision_number];
    return {
      observation: obs,
      legal_actions: msg.legal_actions,
      game_id: msg.game_id,
      decision_id: msg.decision_id,
      // the game's decision number: the one the replay, its viewer, the fault pages and
      // `craits replay rerun --from N` use (decision_id is the wire's); 0 from an older referee
      decision_number: msg.decision_number,
      deadline_ms: msg.deadline_ms,
      time_bank_ms: msg.time_bank_ms,
      strikes: msg.strikes,
      repeated: msg.repeated_request,
      game: game.start,
      hand: obs.hand,
      kind: obs.decision,
    };
  }

  async decide(msg) {
    const received = process.hrtime.bigint();
    const request = this.requestFor(msg);
    this.decisions += 1;
    let chosen;
    let failure = null;
    try {
      chosen = actionId(await this.strategy.choose(request), request);
    } catch (err) {
      failure = botError(err);
      chosen = this.fallback(request, err);
    }
    const thinkUs = Number((process.hrtime.bigint() - received) / 1000n);
    if (logLevel <= LEVELS.debug) {
      const text = request.legal_actions.find((a) => a.id === chosen).text;
      const hand = request.hand.map((c) => c.text).join(' ') || '(hidden)';
      log('debug', `game ${msg.game_id} ${decisionWords(msg.decision_number, msg.decision_id)} (${request.kind}): hand ${hand}, top ${request.observation.top_card.text} -> ${text}`);
    }
    const answer = { game_id: msg.game_id, decision_id: msg.decision_id, action_id: chosen, think_us: thinkUs };
    if (failure) answer.bot_error = failure; // the referee records it as a fault of the bot's (bot_errors)
    return { answer };
  }

  /**
   * The first legal action, in place of a failed choice, and the failure said loudly: the
   * first one at each place in the code in a game prints its whole stack between two rulers, later
   * ones one line each. The referee is told too (Answer.bot_error).
   */
  fallback(request, err) {
    const first = request.legal_actions[0];
    this.fallbacks += 1;
    const what = err instanceof ChoiceError ? err.message : `choose() failed: ${describe(err)}`;
    const key = err instanceof ChoiceError ? what : `${err && err.name} ${describe(err)}`;
    const game = `${request.game_id}\u0000${key}`; // (each game's output has the stack: a kept bot's is shown per game)
    const seen = (this.failures.get(game) || 0) + 1;
    this.failures.set(game, seen);
    if (seen === 1) {
      const trace = err instanceof Error && !(err instanceof ChoiceError) ? err.stack : what;
      log('error', `\n${RULER}\nYOUR BOT FAILED (game ${request.game_id}, ${decisionWords(request.decision_number, request.decision_id)}): ${what}\n`
        + `The kit answered the first legal action '${first.text}' instead and told the referee, `
        + `which counts it as a bot error.\n${trace}\n${RULER}`);
    } else {
      log('error', `game ${request.game_id}, ${decisionWords(request.decision_number, request.decision_id)}: ${what}; `
        + `answered the first legal action '${first.text}' instead (failure ${seen} at this place; `
        + 'its stack was printed the first time in this game)');
    }
    return first.id;
  }

  hook(name, payload) {
    const fn = this.strategy[name];
    if (typeof fn !== 'function') return;
    try {
      fn.call(this.strategy, payload);
    } catch (err) {
      log('error', `${name}() failed: ${describe(err)} (ignored)`);
    }
  }
}

class ChoiceError extends Error {}

/** The legal action id a strategy's return value names, or a ChoiceError saying why not. */
function actionId(choice, request) {
  const id = choice !== null && typeof choice === 'object' ? choice.id : choice;
  if (typeof id !== 'number' || !Number.isInteger(id)) {
    throw new ChoiceError(`choose() returned ${JSON.stringify(choice)}; return one of request.legal_actions or its .id`);
  }
  if (!request.legal_actions.some((a) => a.id === id)) {
    const offered = request.legal_actions.map((a) => `${a.id} (${a.text})`).join(', ');
    throw new ChoiceError(`choose() returned ${id}, which is not a legal action id; legal: ${offered}`);
  }
  return id;
}

const RULER = '!'.repeat(72);

/**
 * How the kit's logs name a decision: the game's number first, the one `craits replay rerun
 * --from N` takes (a student reruns a fault from their log), then the wire's id.
 */
function decisionWords(number, decisionId) {
  return number ? `decision ${number} (id ${decisionId})` : `decision id ${decisionId}`;
}

/** The Answer.bot_error for a failed choice: its first line and, for an exception, where. */
function botError(err) {
  if (err instanceof ChoiceError) return { message: `ChoiceError: ${err.message.split('\n')[0]}`, where: '' };
  if (!(err instanceof Error)) return { message: `thrown: ${String(err).split('\n')[0]}`.slice(0, 200), where: '' };
  const frame = (err.stack || '').split('\n').slice(1).find((line) => line.trim().startsWith('at ')) || '';
  const at = /([^/\\ (]+:\d+):\d+\)?$/.exec(frame.trim());
  return { message: `${err.name}: ${String(err.message).split('\n')[0]}`, where: at ? at[1] : '' };
}

function describe(err) {
  if (!(err instanceof Error)) return String(err);
  const frame = (err.stack || '').split('\n').slice(1).find((line) => line.trim().startsWith('at '));
  const where = frame ? ` ${frame.trim()}` : '';
  return `${err.name}: ${err.message}${where}`;
}

// ---------------------------------------------------------------------------- connection

/**
 * Where to dial and with which credentials: TLS for grpcs://HOST:PORT, tls or a CA file (the
 * organizer's self-signed certificate; else the system's authorities), plain text otherwise.
 * Over TLS there is no fall-back to plain text: a token sent in clear can be read by anyone
 * on the network. Throws UsageError for a CA file that cannot be read.
 */
function connection(server, { tls = false, caFile = '' } = {}) {
  const target = server.startsWith(TLS_SCHEME) ? server.slice(TLS_SCHEME.length) : server;
  if (!(tls || caFile || server.startsWith(TLS_SCHEME))) return { target, credentials: grpc.credentials.createInsecure(), tls: false };
  let root = null;
  if (caFile) {
    try {
      root = fs.readFileSync(caFile);
    } catch (err) {
      throw new UsageError(`CRAITS_TLS_CA/--tls-ca ${caFile}: cannot read it: ${err.message}`);
    }
    if (!root.includes('-----BEGIN CERTIFICATE-----')) {
      throw new UsageError(`CRAITS_TLS_CA/--tls-ca ${caFile}: not a PEM certificate (-----BEGIN CERTIFICATE-----)`);
    }
  }
  return { target, credentials: grpc.credentials.createSsl(root), tls: true };
}

/** Why a TLS connection could not be made, from the status details (null: not a TLS failure). */
function tlsRefusal(details) {
  const lower = details.toLowerCase();
  if (/altnames|hostname/.test(lower)) {
    return `the referee's certificate does not name the host dialled (${details}): connect by a name or address it names `
      + '(the one the organizer gave); this bot never falls back to plain text';
  }
  if (/self[- ]signed|unable to (get|verify)|certificate|cert_/.test(lower)) {
    return `the referee's certificate is not one this bot trusts (${details}): set CRAITS_TLS_CA (or --tls-ca) to the `
      + 'certificate file the organizer gave you, and check its SHA-256 fingerprint with them; this bot never falls back to plain text';
  }
  if (/wrong version number|packet length too long|ssl routines|handshake/.test(lower)) {
    return `the TLS handshake with the referee failed (${details}; a plain-text referee?); this bot never falls back `
      + 'to plain text, which would send its token in clear: ask the organizer for its address';
  }
  return null;
}

/**
 * Node warns (DEP0123) each time grpc-js gives an IP address as the TLS server name, which
 * it does for every grpcs://IP:PORT (a classroom's referee is often known by its address
 * only): that one warning is dropped, every other is printed as Node would.
 */
function quietIpServerNameWarning() {
  const printers = process.listeners('warning');
  process.removeAllListeners('warning');
  process.on('warning', (warning) => {
    if (warning.code !== 'DEP0123') printers.forEach((print) => print(warning));
  });
}

// ---------------------------------------------------------------------------- runner

/** Plays one strategy against one referee; play() resolves to an exit code. */
class Runner {
  /** `framedSocket`: the referee's frames socket (CRAITS_FRAMED_SOCKET, set by a referee that
   * launched this bot in its sandbox): the same stream without gRPC. */
  constructor(strategy, {
    server = DEFAULT_SERVER, token = '', name = '', reconnectS = DEFAULT_RECONNECT_S, protocol, tls = false, tlsCa = '',
    framedSocket = '',
  }) {
    this.strategy = strategy;
    this.server = server;
    this.connection = connection(server, { tls, caFile: tlsCa });
    this.framedSocket = this.connection.tls ? '' : framedSocket; // (asked for TLS: never a plain-text side door)
    this.token = token;
    this.name = name || strategy.name || 'js-bot';
    this.reconnectS = reconnectS;
    this.protocol = protocol || loadProtocol();
    this.dispatcher = new Dispatcher(strategy);
    this.stopped = false;
    this.stopCode = EXIT.OK;
    this.call = null;
    this.wakeUp = null;
    this.welcomed = false;
    this.everWelcomed = false; // this token was welcomed before: a later refusal means its games are over
    this.lastFailure = '';
  }

  async play() {
    let failingSince = null;
    let delayMs = 200;
    while (!this.stopped) {
      this.welcomed = false;
      const code = await this.session();
      if (code !== null) return code;
      const now = Date.now();
      const fresh = this.welcomed || failingSince === null;
      if (fresh) { // a new run of failures: say so once, then quietly retry
        failingSince = now;
        delayMs = 200;
      }
      if (now - failingSince >= this.reconnectS * 1000) {
        log('error', `giving up: no referee at ${this.server} for ${this.reconnectS} s (is it running? is --server right?) last error: ${this.lastFailure}`);
        return EXIT.UNREACHABLE;
      }
      const what = this.welcomed ? 'lost the connection to' : 'cannot reach';
      log(fresh ? 'warn' : 'debug', `${what} the referee at ${this.server}: ${this.lastFailure}; retrying for up to ${this.reconnectS} s`);
      await new Promise((resolve) => {
        const timer = setTimeout(resolve, delayMs);
        this.wakeUp = () => { clearTimeout(timer); resolve(); };
      });
      this.wakeUp = null;
      delayMs = Math.min(delayMs * 2, 5000);
    }
    return this.stopCode;
  }

  /** Close the stream; play() then resolves to `code`. */
  stop(code = EXIT.OK) {
    if (!this.stopped) {
      this.stopped = true;
      this.stopCode = code;
    }
    const call = this.call;
    if (call) {
      // Close this side of the stream: the referee reads a clean exit and hands this bot's seats
      // in games in progress to its default policy at once, rather than waiting the reconnect
      // grace for a bot that is not coming back. Cancel if it has not ended the stream in 5 s
      // (it takes milliseconds; cancelling first would read as a lost connection on a busy referee).
      try {
        call.end();
        setTimeout(() => call.cancel(), LEAVE_MS).unref();
      } catch (err) {
        call.cancel();
      }
    }
    if (this.wakeUp) this.wakeUp();
  }

  /**
   * The Play stream and what closes its channel: gRPC's call, or the same interface as frames on
   * the referee's frames socket (FramedCall), so one session() reads both.
   */
  open() {
    if (this.framedSocket) return { call: new FramedCall(this.framedSocket, this.protocol.Referee.service.Play), close() {} };
    const client = new this.protocol.Referee(this.connection.target, this.connection.credentials);
    return { call: client.Play(), close: () => client.close() };
  }

  /** One stream from Hello to its end: resolves to an exit code, or null to reconnect. */
  session() {
    return new Promise((resolve) => {
      const { call, close } = this.open();
      this.call = call;
      let fatal = null;
      let pending = Promise.resolve(); // answers go out in the order requests came
      call.on('data', (msg) => {
        if (msg.message === 'welcome') this.onWelcome(msg.welcome);
        if (msg.message === 'error') {
          logRefereeError(msg.error, this.everWelcomed && !this.welcomed && msg.error.code === 'ERROR_CODE_UNAUTHENTICATED',
            this.dispatcher.decisionWords(msg.error.game_id, msg.error.decision_id));
          if (msg.error.fatal) fatal = msg.error;
        }
        pending = pending.then(async () => {
          const reply = await this.dispatcher.handle(msg);
          if (reply && this.call === call && !this.stopped) call.write(reply);
        }).catch((err) => log('error', `could not handle a ${msg.message} message: ${describe(err)}`));
      });
      call.on('error', () => {}); // the 'status' event below carries the same news
      call.on('status', (status) => {
        this.call = null;
        pending.finally(() => {
          close();
          resolve(this.ended(status, fatal));
        });
      });
      call.write({
        hello: {
          token: this.token,
          protocol_version: this.protocol.protocolVersion,
          name: this.name.slice(0, 64),
          about: (this.strategy.about || `craits bot.js (Node ${process.version}) strategy ${this.strategy.name || '?'}`).slice(0, 200),
        },
      });
      if (this.stopped) call.cancel();
    });
  }

  onWelcome(welcome) {
    this.welcomed = true;
    this.everWelcomed = true;
    const resumed = welcome.resumed ? '; resuming games in progress' : '';
    log('info', `connected to ${this.server} as '${welcome.bot_name || this.name}' (referee ${welcome.server_version || '?'}, protocol ${welcome.protocol_version})${resumed}`);
  }

  ended(status, fatal) {
    const d = this.dispatcher;
    const summary = `${d.gamesEnded} game(s) ended, ${d.decisions} decision(s), ${d.fallbacks} fallback answer(s)`;
    if (this.stopped) {
      log('info', 'stopped; stream closed');
      return this.stopCode;
    }
    if (status.code === grpc.status.OK) {
      log('info', `the referee closed the stream: done (${summary})`);
      return EXIT.OK;
    }
    const name = STATUS_NAMES[status.code] || String(status.code);
    const details = status.details || '';
    if (fatal && fatal.code === 'ERROR_CODE_SHUTTING_DOWN') {
      log('info', `the referee shut down: done (${summary})`);
      return EXIT.OK;
    }
    if (status.code === grpc.status.UNAUTHENTICATED && this.welcomed) {
      // Welcomed on this very stream, then refused: the token was withdrawn (revoked or renewed).
      log('error', `the referee at ${this.server} ended this bot's stream: ${(fatal ? fatal.message : '') || details}`);
      return EXIT.REFUSED;
    }
    if (status.code === grpc.status.UNAUTHENTICATED && this.everWelcomed) {
      // The same token was welcomed before: not mistyped; the referee is done with it
      // (its games ended while this bot was away).
      log('info', `the referee at ${this.server} no longer knows this bot's token: its games are over; done (${summary})`);
      return EXIT.OK;
    }
    if (REFUSED.has(status.code) || (fatal && REFUSING_ERRORS.has(fatal.code))) {
      const noToken = status.code === grpc.status.UNAUTHENTICATED && !this.token;
      const hint = noToken ? '; this bot sent no token: give it --token TOKEN or set CRAITS_TOKEN'
        : HINTS[status.code] ? `; ${HINTS[status.code]}` : '';
      log('error', `the referee at ${this.server} refused this bot: ${details || (fatal ? fatal.message : '')} (${name})${hint}`);
      return EXIT.REFUSED;
    }
    if (fatal) {
      log('error', `the referee at ${this.server} closed the stream: ${fatal.message || details} (${name})`);
      return EXIT.FAILED;
    }
    const tlsWhy = this.connection.tls && !this.everWelcomed && status.code === grpc.status.UNAVAILABLE ? tlsRefusal(details) : null;
    if (tlsWhy) {
      log('error', `cannot connect to the referee at ${this.server}: ${tlsWhy}`);
      return EXIT.REFUSED;
    }
    if (RETRYABLE.has(status.code)) {
      this.lastFailure = `${details} (${name})`;
      return null;
    }
    log('error', `the referee at ${this.server} ended the stream: ${details} (${name})`);
    return EXIT.FAILED;
  }
}

/**
 * The Play stream as frames on the referee's frames socket (a Unix socket; docs/protocol.md,
 * "Frames on the sandbox's socket"), with the part of a grpc-js call the runner uses: write(),
 * end() (the half-close of a clean leave: an empty END frame), cancel(), and the events 'data'
 * (a RefereeMessage) and 'status' ({ code, details }, once: the referee's END frame, or
 * UNAVAILABLE for a connection that ended without one, as a gRPC call that breaks).
 * Messages are (de)serialised by proto-loader's own functions for the Play method.
 */
class FramedCall extends EventEmitter {
  constructor(socketPath, method) {
    super();
    this.path = socketPath;
    this.serialize = method.requestSerialize;
    this.deserialize = method.responseDeserialize;
    this.buffer = Buffer.alloc(0);
    this.left = false;
    this.status = null;
    this.ending = { code: grpc.status.UNAVAILABLE, details: 'the referee closed the connection without ending the stream' };
    this.connected = false;
    this.socket = net.createConnection(socketPath, () => { this.connected = true; });
    this.socket.on('data', (data) => this.received(data));
    this.socket.on('error', (err) => {
      const why = this.connected ? `the connection to the referee broke: ${err.message}`
        : `cannot connect to ${this.path}: ${err.message}`;
      this.ending = { code: grpc.status.UNAVAILABLE, details: why };
    });
    this.socket.on('close', () => this.finish(this.ending));
  }

  write(message) {
    if (this.left || this.status) return;
    this.socket.write(frame(FRAME_MESSAGE, this.serialize(message)));
  }

  /** Close this side: the referee reads a clean leave, and ends the stream with its END frame. */
  end() {
    if (this.left || this.status) return;
    this.left = true;
    this.socket.write(frame(FRAME_END, Buffer.alloc(0)));
  }

  cancel() {
    this.finish({ code: grpc.status.CANCELLED, details: 'Cancelled on client' });
  }

  received(data) {
    let buffer = this.buffer.length ? Buffer.concat([this.buffer, data]) : data;
    let start = 0;
    while (!this.status && buffer.length - start >= FRAME_HEADER) {
      const kind = buffer.readUInt8(start);
      const size = buffer.readUInt32BE(start + 1);
      if ((kind !== FRAME_MESSAGE && kind !== FRAME_END) || size > MAX_FROM_REFEREE) {
        this.finish({ code: grpc.status.UNAVAILABLE, details: `a frame the referee cannot have sent (kind ${kind}, ${size} bytes)` });
        return;
      }
      const end = start + FRAME_HEADER + size;
      if (buffer.length < end) break;
      const payload = buffer.subarray(start + FRAME_HEADER, end);
      start = end;
      if (kind === FRAME_END) {
        const text = payload.toString('utf8');
        const cut = text.indexOf('\n');
        const name = cut < 0 ? text : text.slice(0, cut);
        const code = name === '' ? grpc.status.OK : grpc.status[name] ?? grpc.status.UNKNOWN;
        this.finish({ code, details: cut < 0 ? '' : text.slice(cut + 1) });
        return;
      }
      let message;
      try {
        message = this.deserialize(payload);
      } catch (err) {
        this.finish({ code: grpc.status.INTERNAL, details: `a frame of ${size} bytes is not a RefereeMessage` });
        return;
      }
      this.emit('data', message);
    }
    buffer = buffer.subarray(start);
    this.buffer = buffer.length ? Buffer.from(buffer) : Buffer.alloc(0); // (not a view that pins a large chunk)
  }

  /** The stream's end, said once; the connection is dropped with it. */
  finish(status) {
    if (this.status) return;
    this.status = status;
    this.socket.destroy();
    this.emit('status', status);
  }
}

const FRAME_HEADER = 5; // 1 byte of kind, 4 of length (big-endian)
const FRAME_MESSAGE = 0;
const FRAME_END = 1;
const MAX_FROM_REFEREE = 4 * 1024 * 1024; // the most read in one frame (gRPC's default for a message received)

/** One frame: its kind, its length, its bytes. */
function frame(kind, payload) {
  const out = Buffer.allocUnsafe(FRAME_HEADER + payload.length);
  out.writeUInt8(kind, 0);
  out.writeUInt32BE(payload.length, 1);
  payload.copy(out, FRAME_HEADER);
  return out;
}

/** One line per referee Error; `decision`: how the kit names the decision it is about (Dispatcher.decisionWords). */
function logRefereeError(error, news = false, decision = '') {
  const parts = [`referee error ${error.code}: ${error.message}`];
  if (error.rule) parts.push(`rule ${error.rule}`);
  if (error.game_id) {
    const about = error.decision_id && error.decision_id !== '0' ? ` ${decision || `decision id ${error.decision_id}`}` : '';
    parts.push(`game ${error.game_id}${about}`);
  }
  if (error.strikes) parts.push(`strikes ${error.strikes}`);
  if (error.fatal) parts.push('fatal');
  const quiet = news || error.code === 'ERROR_CODE_SHUTTING_DOWN'; // news, not a problem of the bot's
  log(quiet ? 'info' : 'warn', parts.join('; '));
}

// ---------------------------------------------------------------------------- command line

class UsageError extends Error {}

/** A strategy module: a built-in name, or a path to a file exporting choose(request). */
function loadStrategy(spec) {
  const file = BUILTIN_STRATEGIES.includes(spec)
    ? path.join(__dirname, 'strategies', `${spec}.js`)
    : path.resolve(process.cwd(), spec);
  let strategy;
  try {
    strategy = require(file);
  } catch (err) {
    // Only the strategy itself missing is "no such strategy": a module it requires that is
    // missing names the strategy too, in its require stack, and a broken file is the
    // author's to fix: both are said as they are, with the file and line, and no stack.
    if (err.code === 'MODULE_NOT_FOUND' && !(err.requireStack || []).includes(file)) {
      throw new UsageError(`--strategy ${spec}: no such strategy (built in: ${BUILTIN_STRATEGIES.join(', ')}; or a path to a .js file)`);
    }
    throw new UsageError(`--strategy ${spec}: loading ${file} failed: ${describeLoadError(err, file)}`);
  }
  if (strategy && typeof strategy.choose !== 'function' && strategy.default
      && typeof strategy.default.choose === 'function') {
    strategy = strategy.default; // `export default { choose(request) { ... } }`, loaded by a Node that requires ES modules
  }
  if (!strategy || typeof strategy.choose !== 'function') {
    throw new UsageError(`--strategy ${spec}: the module must export an object with a function choose(request): `
      + 'module.exports = { choose(request) { ... } }');
  }
  if (!strategy.name || typeof strategy.name !== 'string') strategy.name = path.basename(file, '.js');
  return strategy;
}

/** A strategy's load error in one line: what, and where in the strategy (a SyntaxError's stack starts with file:line). */
function describeLoadError(err, file) {
  if (!(err instanceof Error)) return String(err);
  if (err.code === 'MODULE_NOT_FOUND') {
    const by = (err.requireStack || [])[0] || file;
    return `${err.message.split('\n')[0]}, required by ${by} (install it, e.g. with npm in the strategy's folder)`;
  }
  const message = err.message;
  const stack = String(err.stack || '');
  const syntaxAt = err instanceof SyntaxError ? stack.split('\n')[0] : '';
  const frame = stack.split('\n').find((line) => line.includes(file));
  const at = syntaxAt.startsWith(file) ? ` at ${syntaxAt}` : frame ? ` ${frame.trim()}` : '';
  return `${err.name}: ${message}${at}`;
}

const HELP = `usage: node bot.js --strategy random|heuristic|FILE.js [--server HOST:PORT] [--token T] [--name N]
                   [--tls] [--tls-ca FILE] [--reconnect-s SECONDS] [--proto FILE] [-v|--verbose] [-q|--quiet]

  --strategy     random, heuristic, or a path to a .js file exporting choose(request)
  --server       referee address, or grpcs://HOST:PORT over TLS (env CRAITS_SERVER; default ${DEFAULT_SERVER})
  --tls          connect over TLS (env CRAITS_TLS=1; implied by grpcs:// and --tls-ca)
  --tls-ca       the referee's (self-signed) certificate to trust (env CRAITS_TLS_CA)
  --token        this bot's secret token (env CRAITS_TOKEN)
  --name         display name (env CRAITS_BOT_NAME)
  --reconnect-s  how long to keep trying to reach the referee (default ${DEFAULT_RECONNECT_S})
  --proto        the protocol file (default: ${path.relative(process.cwd(), DEFAULT_PROTO) || DEFAULT_PROTO})`;

function parseCommandLine(argv, env = process.env) {
  let values;
  try {
    ({ values } = parseArgs({
      args: argv,
      options: {
        strategy: { type: 'string' },
        server: { type: 'string' },
        tls: { type: 'boolean' },
        'tls-ca': { type: 'string' },
        token: { type: 'string' },
        name: { type: 'string' },
        'reconnect-s': { type: 'string' },
        proto: { type: 'string' },
        verbose: { type: 'boolean', short: 'v' },
        quiet: { type: 'boolean', short: 'q' },
        help: { type: 'boolean', short: 'h' },
      },
    }));
  } catch (err) {
    throw new UsageError(err.message);
  }
  if (values.help) return { help: true };
  const options = {
    strategy: values.strategy || env.CRAITS_STRATEGY || '',
    server: values.server || env.CRAITS_SERVER || DEFAULT_SERVER,
    tls: Boolean(values.tls) || !['', '0', undefined].includes(env.CRAITS_TLS),
    tlsCa: values['tls-ca'] || env.CRAITS_TLS_CA || '',
    token: values.token ?? env.CRAITS_TOKEN ?? '',
    name: values.name || env.CRAITS_BOT_NAME || '',
    reconnectS: values['reconnect-s'] === undefined ? DEFAULT_RECONNECT_S : Number(values['reconnect-s']),
    proto: values.proto ? path.resolve(process.cwd(), values.proto) : DEFAULT_PROTO,
    verbose: Boolean(values.verbose),
    quiet: Boolean(values.quiet),
  };
  if (!options.strategy) throw new UsageError('--strategy is required: random, heuristic, or a path to a .js file');
  const address = options.server.startsWith(TLS_SCHEME) ? options.server.slice(TLS_SCHEME.length) : options.server;
  if (!address.includes(':') || address.startsWith(':')) {
    throw new UsageError(`--server takes HOST:PORT or ${TLS_SCHEME}HOST:PORT, e.g. ${DEFAULT_SERVER}; got '${options.server}'`);
  }
  connection(options.server, { tls: options.tls, caFile: options.tlsCa }); // (a CA file that cannot be read: said now)
  if (!Number.isFinite(options.reconnectS) || options.reconnectS < 0) {
    throw new UsageError('--reconnect-s must be a number, 0 or more');
  }
  return options;
}

async function main(argv = process.argv.slice(2)) {
  let options;
  let strategy;
  let protocol;
  try {
    options = parseCommandLine(argv);
    if (options.help) {
      process.stdout.write(`${HELP}\n`);
      return EXIT.OK;
    }
    strategy = loadStrategy(options.strategy);
    try {
      protocol = loadProtocol(options.proto);
    } catch (err) {
      throw new UsageError(`cannot load the protocol from ${options.proto}: ${err.message}`);
    }
  } catch (err) {
    if (!(err instanceof UsageError)) throw err;
    process.stderr.write(`bot.js: error: ${err.message}\n${HELP.split('\n\n')[0]}\n`);
    return EXIT.USAGE;
  }
  logLevel = options.verbose ? LEVELS.debug : options.quiet ? LEVELS.warn : LEVELS.info;
  const runner = new Runner(strategy, {
    server: options.server, token: options.token, name: options.name, reconnectS: options.reconnectS, protocol,
    tls: options.tls, tlsCa: options.tlsCa, framedSocket: process.env[FRAMED_SOCKET_ENV] || '',
  });
  if (runner.connection.tls) quietIpServerNameWarning();
  process.on('SIGTERM', () => runner.stop(EXIT.OK));
  process.on('SIGINT', () => runner.stop(EXIT.INTERRUPTED));
  return runner.play();
}

module.exports = { Dispatcher, Runner, FramedCall, EXIT, frame, actionId, connection, loadProtocol, loadStrategy, parseCommandLine, LOADER_OPTIONS };

if (require.main === module) {
  main().then((code) => process.exit(code), (err) => {
    process.stderr.write(`bot.js: unexpected error: ${err && err.stack ? err.stack : err}\n`);
    process.exit(EXIT.FAILED);
  });
}
