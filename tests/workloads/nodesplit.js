// SPDX-License-Identifier: Apache-2.0
// A Node.js workload with a known split (Node 16 and later). Like
// tests/workloads/pysplit.py it measures its own truth: the CPU time spent in
// each leaf, around every call (process.cpuUsage(): the process's, which on
// an otherwise idle Node is the main thread's but for V8's compiler and
// garbage-collector threads).
//
//     node nodesplit.js MODE SECONDS
//
// MODE: split (leaves 60/30/10, plain functions), method (the leaves as methods of a
// class, called through an arrow function and an anonymous function), recursion (the
// split 1,000 frames deep: recurse calls itself, then handle), native (zlib's crc32, or
// before Node 20.15 its deflateSync, under its JavaScript caller checksum: its CPU is
// counted as leaf_a's), worker (the split 70/20/10 in a worker_threads Worker while the
// main thread waits: process.cpuUsage() is then the worker's), async (each call of handle
// from an async function, handleAsync, resumed from the microtask queue after an await).
// The split runs in
// rounds of about 50 ms between which the event loop turns, so that SIGTERM is heard; at
// the end (or on SIGTERM) it appends one line to $EMBER_TRUTH_FILE:
//
//     tid=PID name=main leaf_a=NS leaf_b=NS leaf_c=NS
//
// Stacks, root first: ... > runRound > handle > leafA (leafB, leafC); method mode:
// ... > runRound > (anonymous) > Split.handle > Split.leafA; recursion: ... > runRound >
// recurse (1,000 of them) > handle > leafA; native: ... > runRound > checksum > zlib's C++;
// worker: the worker's own start > ... > runRound > handle > leafA; async: ... (the
// microtask queue) > handleAsync > handle > leafA. The leaves' hot loops
// stand on one line each (// hot-a, ...), calling nothing.
'use strict';
const fs = require('fs');
const zlib = require('zlib');
const { Worker, isMainThread } = require('worker_threads');

const UNIT_US = 1000; // one unit of work: a millisecond of CPU time
const ROUND_US = 50000;
const UNITS = isMainThread ? [6, 3, 1] : [7, 2, 1];
const spent = [0, 0, 0]; // microseconds
let sink = 0;

function cpuUs() {
  const u = process.cpuUsage();
  return u.user + u.system;
}

function leafA(deadline) {
  let t = 0;
  for (;;) {
    for (let i = 0; i < 4000; i++) { t += (i * i) % 7; } // hot-a
    if (cpuUs() >= deadline) return t; // clock-a
  }
}

function leafB(deadline) {
  let t = 0;
  for (;;) {
    for (let i = 0; i < 4000; i++) { t = (t + i + 3) & 0xffff; } // hot-b
    if (cpuUs() >= deadline) return t; // clock-b
  }
}

function leafC(deadline) {
  let t = 0;
  for (;;) {
    for (let i = 0; i < 4000; i++) { t ^= (t << 3) + i; } // hot-c
    if (cpuUs() >= deadline) return t; // clock-c
  }
}

// Runs a leaf for its units of CPU time, give or take 30% at random (against sampling
// aliasing), adding what it took to spent.
function handle(leaf) {
  const start = cpuUs();
  const deadline = start + UNITS[leaf] * UNIT_US * (0.7 + 0.6 * Math.random());
  let r;
  if (leaf === 0) r = leafA(deadline); // call-a
  else if (leaf === 1) r = leafB(deadline); // call-b
  else r = leafC(deadline); // call-c
  spent[leaf] += cpuUs() - start;
  return r;
}

class Split {
  leafA(deadline) { return leafA(deadline); }
  leafB(deadline) { return leafB(deadline); }
  leafC(deadline) { return leafC(deadline); }
  handle(leaf) {
    const start = cpuUs();
    const deadline = start + UNITS[leaf] * UNIT_US * (0.7 + 0.6 * Math.random());
    const r = leaf === 0 ? this.leafA(deadline) : leaf === 1 ? this.leafB(deadline)
                                                              : this.leafC(deadline);
    spent[leaf] += cpuUs() - start;
    return r;
  }
}

function recurse(depth, leaf) {
  if (depth === 0) return handle(leaf); // call-bottom
  return recurse(depth - 1, leaf) + 1; // call-rec
}

const data = Buffer.alloc(1 << 16, 'ember');
// zlib's own work under its JavaScript caller: counted as leaf_a's.
function checksum() {
  const start = cpuUs();
  const r = typeof zlib.crc32 === 'function' ? zlib.crc32(data) // call-native
                                             : zlib.deflateSync(data).length;
  spent[0] += cpuUs() - start;
  return r;
}

async function handleAsync(leaf) {
  await null;
  return handle(leaf); // call-async
}

async function runRoundAsync() {
  const end = cpuUs() + ROUND_US;
  while (cpuUs() < end) {
    for (let leaf = 0; leaf < 3; leaf++) sink += await handleAsync(leaf);
  }
}

function runRound(call) {
  const end = cpuUs() + ROUND_US;
  while (cpuUs() < end) {
    for (let leaf = 0; leaf < 3; leaf++) sink += call(leaf);
  }
}

function writeTruth() {
  const path = process.env.EMBER_TRUTH_FILE;
  if (!path) return;
  fs.appendFileSync(path, `tid=${process.pid} name=main leaf_a=${spent[0] * 1000} ` +
                              `leaf_b=${spent[1] * 1000} leaf_c=${spent[2] * 1000}\n`);
}

let stopped = false;

function main() {
  const mode = process.argv[2] || 'split';
  const seconds = Number(process.argv[3] || 10);
  const split = new Split();
  const calls = {
    method: (leaf) => (function (l) { return split.handle(l); })(leaf),
    recursion: (leaf) => recurse(1000, leaf),
    native: () => checksum(),
  };
  const call = calls[mode] || handle;
  if (mode === 'worker' && isMainThread) {
    // The main thread only waits; the worker writes the truth, by its own pid line.
    const w = new Worker(__filename, { argv: ['split', String(seconds)] });
    process.on('SIGTERM', () => w.postMessage('stop'));
    w.on('exit', () => process.exit(0));
    return;
  }
  if (!isMainThread) {
    require('worker_threads').parentPort.on('message', () => { stopped = true; writeTruth(); process.exit(0); });
  }
  const stopAt = Date.now() + seconds * 1000;
  const stop = () => {
    if (stopped) return;
    stopped = true;
    writeTruth();
    process.exit(0);
  };
  if (isMainThread) process.on('SIGTERM', stop);
  const round = () => {
    if (stopped) return;
    if (Date.now() >= stopAt) return stop();
    if (mode === 'async') return runRoundAsync().then(() => setImmediate(round));
    runRound(call);
    setImmediate(round);
  };
  round();
}

main();
