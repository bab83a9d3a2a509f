// @ts-check
// `c2c-bridge doctor`: check a broker root — where it is and why, mode and owner, lock health,
// registrations and liveness, what each inbox holds, dead letters. Every broker file is read
// by the addon (read-only exports: nothing is locked for long, moved or copied aside); this
// file collects the answers into one report.
'use strict';

const fs = require('node:fs');
const { EXIT_FAILED, EXIT_OK } = require('./cli-error.js');
const { locateRoot } = require('./context.js');

/** @typedef {import('./context.js').Context} Context */
/** @typedef {import('./context.js').Result} Result */

/**
 * The `code: message` of an addon error.
 * @param {unknown} e
 */
function codeAndMessage(e) {
  const err = /** @type {{ code?: unknown, message?: unknown }} */ (e);
  return { code: String(err?.code ?? 'E_UNKNOWN'), message: String(err?.message ?? e) };
}

/**
 * @param {Context} ctx
 * @returns {Result}
 */
function doctor({ addon, values, term: { safe } }) {
  const loc = locateRoot(addon, values);
  /** @type {{ root: object, permissions: object | null, lock: object | null, registrations: import('../../index.js').Peer[], unreadableRegistrations?: import('../../index.js').UnreadableRegistration[], inboxes: Array<Record<string, unknown>>, deadLetter: { present: boolean, lines: number | null }, problems: string[] }} */
  const report = {
    root: { path: loc.path, source: loc.source, exists: loc.exists, reason: loc.reason },
    permissions: null,
    lock: null,
    registrations: [],
    inboxes: [],
    deadLetter: { present: false, lines: 0 },
    problems: [],
  };
  const text = [
    `root: ${safe(loc.path)} (from ${loc.source})${loc.exists ? '' : ' — does not exist yet'}`,
    `  why: ${safe(loc.reason)}`,
  ];
  if (!loc.exists) {
    text.push('nothing to check: no session has registered in this root');
    return { json: report, text, exit: EXIT_OK };
  }

  const st = fs.statSync(loc.path);
  const uid = typeof process.getuid === 'function' ? process.getuid() : null;
  /** @type {{ mode: string, uid: number, ownedByCurrentUser: boolean | null, ok: boolean, error: { code: string, message: string } | null }} */
  const perm = {
    mode: `0${(st.mode & 0o777).toString(8)}`,
    uid: st.uid,
    ownedByCurrentUser: uid === null ? null : st.uid === uid,
    ok: true,
    error: null,
  };
  try {
    addon.checkRoot(loc.path);
  } catch (e) {
    perm.ok = false;
    perm.error = codeAndMessage(e);
    report.problems.push(`${perm.error.code}: ${perm.error.message}`);
  }
  report.permissions = perm;
  text.push(`permissions: mode ${perm.mode}, owner uid ${perm.uid}${perm.ownedByCurrentUser === false ? ' (not you)' : ''} — ${perm.error ? `FAIL ${perm.error.code}: ${safe(perm.error.message)}` : 'ok'}`);
  if (perm.ok && (st.mode & 0o077) !== 0) {
    text.push('  note: group/others can read or list the root; c2c creates it 0700');
  }
  if (!perm.ok) return { json: report, text, exit: EXIT_FAILED };

  const lockFree = addon.probeLock(loc.path, 'registry.json', 200);
  report.lock = { file: 'registry.json.lock', free: lockFree };
  if (!lockFree) report.problems.push('registry.json.lock is held for more than 200 ms');
  text.push(`lock: registry.json.lock ${lockFree ? 'free' : 'HELD (another process holds it; see E_LOCK_TIMEOUT)'}`);

  try {
    report.registrations = addon.listRegistrations(loc.path);
  } catch (e) {
    const { code, message } = codeAndMessage(e);
    report.problems.push(`registry.json: ${code}: ${message}`);
    text.push(`registrations: FAIL ${code}: ${safe(message)}`);
  }
  const regs = report.registrations;
  const dead = regs.filter((r) => !r.alive).length;
  text.push(`registrations: ${regs.length} (${regs.length - dead} alive, ${dead} dead${dead ? '; run `c2c-bridge sweep`' : ''})`);
  for (const r of regs) {
    text.push(`  ${r.alive ? 'alive' : 'dead '}  ${safe(r.alias)}  ${safe(r.sessionId)}  pid=${r.pid ?? '-'}`);
  }
  // Records that name an alias but cannot be read still hold it (fail closed): report them.
  report.unreadableRegistrations = [];
  try {
    report.unreadableRegistrations = addon.listUnreadableRegistrations(loc.path);
  } catch {
    // already reported above with the registrations
  }
  for (const u of report.unreadableRegistrations) {
    report.problems.push(`registry.json: unreadable registration for alias ${JSON.stringify(u.alias)} (${u.detail}); it keeps holding the alias until it is fixed or removed`);
    text.push(`  UNREADABLE  ${safe(u.alias)}  ${safe(u.sessionId ?? '-')}  ${safe(u.detail)}`);
  }

  // Each inbox record by record, as the broker reads it (Rust): what is delivered, by which
  // id, and what is not a message at all (left in place, never delivered: reported, not hidden).
  const registered = new Set(regs.map((r) => r.sessionId));
  try {
    for (const f of addon.inspectInboxes(loc.path)) {
      const name = `${f.sessionId}.inbox.json`;
      /** @type {Record<string, unknown>} */
      const entry = { sessionId: f.sessionId, registered: registered.has(f.sessionId) };
      if (f.error != null) {
        entry.error = f.error;
        report.problems.push(`${name}: ${f.error}`);
      } else {
        const notMessages = f.notMessages ?? [];
        Object.assign(entry, { messages: f.messages, bytes: f.bytes, derivedIds: f.derivedIds, notMessages, notUnderstood: f.notUnderstood });
        if (notMessages.length) {
          report.problems.push(`${name}: ${notMessages.length} record(s) that are not messages (never delivered): ${notMessages.join('; ')}`);
        }
        if (f.notUnderstood) report.problems.push(`${name}: ${f.notUnderstood} unreadable record(s), moved to quarantine/ by the next write`);
      }
      report.inboxes.push(entry);
    }
  } catch (e) {
    const { code, message } = codeAndMessage(e);
    report.problems.push(`inboxes: ${code}: ${message}`);
  }
  text.push(`inboxes: ${report.inboxes.length}`);
  for (const i of report.inboxes) {
    const notMessages = /** @type {string[] | undefined} */ (i.notMessages);
    let what = i.error ? `FAIL ${safe(i.error)}` : `${i.messages} message(s) queued`;
    if (!i.error && i.derivedIds) what += ` (${i.derivedIds} without message_id, delivered by derived id)`;
    if (!i.error && notMessages?.length) what += `; ${notMessages.length} record(s) NOT messages: ${notMessages.map(safe).join('; ')}`;
    if (!i.error && i.notUnderstood) what += `; ${i.notUnderstood} unreadable record(s)`;
    text.push(`  ${safe(i.sessionId)}: ${what}${i.registered ? '' : ' (no registration)'}`);
  }

  try {
    const lines = addon.countDeadLetters(loc.path);
    if (lines != null) report.deadLetter = { present: true, lines };
  } catch (e) {
    const { code, message } = codeAndMessage(e);
    if (code === 'E_ROOT_INSECURE') {
      report.problems.push('dead-letter.jsonl is a symlink or not a regular file (never followed)');
      report.deadLetter = { present: true, lines: null };
    } else {
      report.problems.push(`dead-letter.jsonl: ${message}`);
    }
  }
  text.push(report.deadLetter.present
    ? `dead-letter.jsonl: present, ${report.deadLetter.lines ?? '?'} message(s) waiting for their sessions to return`
    : 'dead-letter.jsonl: absent');

  text.push(report.problems.length === 0 ? 'ok: no problems found' : `${report.problems.length} problem(s) found`);
  return { json: report, text, exit: report.problems.length === 0 ? EXIT_OK : EXIT_FAILED };
}

module.exports = { doctor };
