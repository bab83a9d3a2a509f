// @ts-check
// The CLI's relay commands (issue 17, RELAY.md): `relay` runs this root's connector to a NATS
// JetStream server until SIGINT/SIGTERM; `relay-setup` provisions node streams and the
// presence bucket. Thin layers over the addon's `Relay` class and `relayProvision`.
'use strict';

const os = require('node:os');
const { CliError, EXIT_FAILED, usage } = require('./cli-error.js');
const { locateRoot } = require('./context.js');

/** @typedef {import('./context.js').Context} Context */
/** @typedef {import('./context.js').Result} Result */
/** @typedef {import('../../index.js').Relay} Relay */

/** The default relay node name: the host name reduced to the node charset. */
function defaultNode() {
  const n = os.hostname().split('.')[0].replace(/[^A-Za-z0-9_-]/g, '-').slice(0, 32);
  return n || 'node';
}

/**
 * `relay`: run the connector for the root until SIGINT/SIGTERM (or until it fails). While
 * another connector holds the root's lock (E_RELAY_BUSY), stand by and retry every 2 s.
 * @param {Context} ctx
 * @returns {Promise<Result>}
 */
async function relay({ addon, term: { safe }, values }) {
  if (!values.url) throw usage('relay needs --url nats://HOST:PORT');
  const loc = locateRoot(addon, values);
  const node = values.node ?? defaultNode();
  /** @type {import('../../index.js').RelayOptions} */
  const options = { root: loc.path, url: values.url, creds: values.creds, node, provision: values.provision ?? false };
  const burst = values['rate-burst'];
  if (burst !== undefined) {
    if (!/^\d+$/.test(burst) || Number(burst) < 1) throw usage(`--rate-burst must be a positive integer, got "${safe(burst)}"`);
    options.rateBurst = Number(burst);
  }
  let stopping = false;
  /** @type {Promise<void>} */
  const stopped = new Promise((resolve) => {
    const stop = () => {
      stopping = true;
      resolve();
    };
    process.once('SIGINT', stop);
    process.once('SIGTERM', stop);
  });
  /** @type {Relay | null} */
  let r = null;
  let announced = false;
  while (!r && !stopping) {
    try {
      r = addon.Relay.start(options);
    } catch (e) {
      const err = /** @type {{ code?: unknown, message?: unknown }} */ (e);
      if (!err || err.code !== 'E_RELAY_BUSY') throw e;
      if (!announced) process.stderr.write(`c2c-bridge relay: ${safe(String(err.message))}\n`);
      announced = true;
      await Promise.race([stopped, new Promise((res) => setTimeout(res, 2000))]);
    }
  }
  if (!r) return { json: { node, stopped: true }, text: ['relay: stopped while standing by'] };
  const running = r;
  process.stderr.write(`c2c-bridge relay: node ${safe(node)} connected to ${safe(values.url.replace(/\/\/[^@/]*@/, '//'))} for ${safe(loc.path)}\n`);
  /** @type {string | null} */
  let failed = null;
  await Promise.race([
    stopped,
    new Promise((resolve) => {
      const t = setInterval(() => {
        const s = running.state();
        if (!s.running) {
          failed = s.lastError ?? 'the connector ended';
          clearInterval(t);
          resolve(undefined);
        }
      }, 1000);
      stopped.then(() => clearInterval(t));
    }),
  ]);
  /** @type {string | null} */
  let stopError = null;
  try {
    running.stop();
  } catch (e) {
    stopError = e instanceof Error ? e.message : String(e);
  }
  const state = running.state();
  if (failed !== null || stopError !== null) throw new CliError('E_RELAY', String(failed ?? stopError), EXIT_FAILED);
  return {
    json: { node, ...state },
    text: [`relay stopped: sent ${state.sent}, received ${state.received}, rejected ${state.rejected}, errors ${state.errors}`],
  };
}

/**
 * `relay-setup <node>...`: create the streams of the named nodes and the presence bucket.
 * @param {Context} ctx
 * @returns {Result}
 */
function relaySetup({ addon, term: { safe }, values, args }) {
  if (!values.url) throw usage('relay-setup needs --url nats://HOST:PORT');
  addon.relayProvision(values.url, values.creds, args);
  return { json: { provisioned: args }, text: [`created (or found) the streams of ${args.map(safe).join(', ')} and the presence bucket`] };
}

module.exports = { relay, 'relay-setup': relaySetup };
