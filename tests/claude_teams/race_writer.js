// A writer that takes a Claude Code mailbox's lock exactly as Claude Code 2.1.328 does: npm's
// proper-lockfile, lockfilePath FILE.lock, retries {retries: 10, minTimeout: 5, maxTimeout:
// 100}, the rest at its defaults; then read, change, write a temp file and rename it over.
// Like newer Claude Code, it also prunes: when the mailbox holds more than PRUNE_AT entries it
// moves them all to a log (appended before the rewrite, so none is lost to the test's count).
// Usage: node race_writer.js MAILBOX LOG COUNT PRUNE_AT
"use strict";
const fs = require("fs");
const lockfile = require("proper-lockfile");
const [mailbox, log, countText, pruneText] = process.argv.slice(2);
const count = Number(countText);
const pruneAt = Number(pruneText);
const options = {
  lockfilePath: `${mailbox}.lock`,
  retries: { retries: 10, minTimeout: 5, maxTimeout: 100 },
  onCompromised: (err) => { console.log(`compromised ${err.message}`); process.exit(3); },
};

async function once(n) {
  const release = await lockfile.lock(mailbox, options);
  try {
    const raw = fs.readFileSync(mailbox, "utf8");
    let entries = raw.trim() === "" ? [] : JSON.parse(raw);
    if (entries.length > pruneAt) {
      fs.appendFileSync(log, entries.map((e) => JSON.stringify(e) + "\n").join(""));
      entries = [];
    }
    entries.push({ from: "node", text: `node ${n}`, timestamp: new Date().toISOString(),
      msgV: 1, msg_id: `node-${n}`, type: "message", read: false });
    const tmp = `${mailbox}.tmp-${process.pid}`;
    fs.writeFileSync(tmp, JSON.stringify(entries, null, 2));
    fs.renameSync(tmp, mailbox);
  } finally {
    await release();
  }
}

(async () => {
  let locked = 0;
  for (let n = 0; n < count; n++) {
    for (;;) {
      try { await once(n); break; } catch (err) {
        if (err.code !== "ELOCKED") throw err;
        locked++; // Claude Code would log and drop the message; the test retries it
      }
    }
  }
  console.log(`done ${count} locked ${locked}`);
})().catch((err) => { console.log(`error ${err.stack}`); process.exit(2); });
