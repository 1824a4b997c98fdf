#!/usr/bin/env node
// The `a2a-mod` command of the npm package: finds this platform's native binary (the optional
// dependency `a2a-mod-<platform>-<arch>` npm installed beside this package) and runs it with the
// same arguments, standard streams and exit status. Nothing is downloaded here or at install.
//
// Only a person's commands pass through this file. `a2a-mod install` writes the native binary's
// own path into Claude Code's settings (the status line runs every second: a Node start each time
// would cost more than the whole line).
"use strict";

const { spawn } = require("child_process");

const target = `${process.platform}-${process.arch}`;
const name = `a2a-mod-${target}`;
let bin;
try {
  bin = require.resolve(`${name}/bin/a2a-mod`);
} catch {
  process.stderr.write(
    `a2a-mod: no native binary for ${target} (the package ${name} is not installed) — ` +
      "reinstall with `npm i -g a2a-mod` (without --omit=optional), " +
      "or build it from source (the a2a-mod repository's install.sh)\n",
  );
  process.exit(1);
}

const child = spawn(bin, process.argv.slice(2), { stdio: "inherit" });
// A signal sent to this process (Ctrl-C reaches both; a `kill` only this one) goes on to the
// binary, so stopping the command stops it.
for (const sig of ["SIGINT", "SIGTERM", "SIGHUP"]) {
  process.on(sig, () => child.kill(sig));
}
child.on("error", (e) => {
  process.stderr.write(`a2a-mod: cannot run ${bin}: ${e.message}\n`);
  process.exit(1);
});
child.on("exit", (code, signal) => {
  if (signal) {
    process.removeAllListeners(signal);
    process.kill(process.pid, signal);
  }
  process.exit(code ?? 1);
});
