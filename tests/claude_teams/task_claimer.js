// A teammate claiming one task over and over, as Claude Code 2.1.328's task store changes a task:
// npm's proper-lockfile on the task file itself (lockfilePath N.json.lock), retries {retries:
// 30, minTimeout: 5, maxTimeout: 100}; read, merge, and write the file in place
// (JSON.stringify(task, null, 2), as its updateTask does). Each claim sets the owner and
// in_progress and counts itself in metadata.claims, so a write that lost one shows.
// Prints "started" after its first claim. Usage: node task_claimer.js TASK COUNT OWNER
"use strict";
const fs = require("fs");
const lockfile = require("proper-lockfile");
const [task, countText, owner] = process.argv.slice(2);
const count = Number(countText);
const options = {
  lockfilePath: `${task}.lock`,
  retries: { retries: 30, minTimeout: 5, maxTimeout: 100 },
  onCompromised: (err) => { console.log(`compromised ${err.message}`); process.exit(3); },
};

(async () => {
  for (let n = 0; n < count; n++) {
    const release = await lockfile.lock(task, options);
    try {
      const doc = JSON.parse(fs.readFileSync(task, "utf8"));
      const metadata = { ...(doc.metadata || {}), claims: ((doc.metadata || {}).claims || 0) + 1 };
      fs.writeFileSync(task, JSON.stringify({ ...doc, owner, status: "in_progress", metadata }, null, 2));
    } finally {
      await release();
    }
    if (n === 0) console.log("started");
  }
  console.log("done");
})().catch((err) => { console.log(`error ${err.stack}`); process.exit(2); });
