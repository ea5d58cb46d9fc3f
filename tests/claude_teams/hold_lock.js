// Holds a Claude Code mailbox's lock (npm's proper-lockfile, as Claude Code takes it) past its
// staleness: prints "locked", then "past-stale" once it has held it longer than `stale` (its
// mtime refreshed all along by proper-lockfile), and releases when its stdin closes.
// Usage: node hold_lock.js MAILBOX
"use strict";
const lockfile = require("proper-lockfile");
const mailbox = process.argv[2];
const STALE_MS = 10000; // proper-lockfile's default, which Claude Code keeps
(async () => {
  const release = await lockfile.lock(mailbox, {
    lockfilePath: `${mailbox}.lock`,
    retries: { retries: 10, minTimeout: 5, maxTimeout: 100 },
    onCompromised: (err) => { console.log(`compromised ${err.message}`); process.exit(3); },
  });
  const since = Date.now();
  console.log("locked");
  const timer = setInterval(() => {
    if (Date.now() - since > STALE_MS + 500) { console.log("past-stale"); clearInterval(timer); }
  }, 100);
  process.stdin.resume();
  process.stdin.on("end", async () => { clearInterval(timer); await release(); console.log("released"); });
})().catch((err) => { console.log(`error ${err.stack}`); process.exit(2); });
