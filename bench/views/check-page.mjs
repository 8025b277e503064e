// Opens an HTML page or SVG file in headless Chromium (served on loopback), collects console
// errors, reads back its text, and screenshots it. Usage: node check-page.mjs FILE [PNG]
import puppeteer from 'puppeteer-core';
import path from 'path';
import http from 'http';
import fs from 'fs';
const file = path.resolve(process.argv[2]);
const png = process.argv[3];
const type = file.endsWith('.html') ? 'text/html' : 'image/svg+xml';
const server = http.createServer((req, res) => {
  fs.readFile(file, (err, data) => {
    if (err) { res.writeHead(404); res.end(); return; }
    res.writeHead(200, { 'Content-Type': type });
    res.end(data);
  });
});
await new Promise(r => server.listen(0, '127.0.0.1', r));
const browser = await puppeteer.launch({ executablePath: '/usr/bin/chromium', headless: true,
  args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage', '--no-zygote', '--single-process'] });
const page = await browser.newPage();
await page.setViewport({ width: 1400, height: 1000 });
const errors = [];
const requests = [];
page.on('console', m => { if (m.type() === 'error') errors.push(m.text()); });
page.on('pageerror', e => errors.push(String(e)));
page.on('request', r => { if (!r.url().startsWith('http://127.0.0.1') && !r.url().startsWith('data:')) requests.push(r.url()); });
await page.goto(`http://127.0.0.1:${server.address().port}/`, { waitUntil: 'load' });
await new Promise(r => setTimeout(r, 1000));
// Text of the page and of any frames (the HTML report embeds its flame graph in an iframe).
let text = await page.evaluate(() => document.documentElement.textContent || '');
for (const f of page.frames()) {
  if (f !== page.mainFrame()) {
    try { text += '\n' + await f.evaluate(() => document.documentElement.textContent || ''); } catch (e) { errors.push('frame: ' + e); }
  }
}
let svgs = await page.evaluate(() => document.querySelectorAll('svg').length);
// Flame graph boxes drawn (in the page, or in the report's iframe).
let boxes = await page.evaluate(() => document.querySelectorAll('#frames > g').length);
for (const f of page.frames()) {
  if (f !== page.mainFrame()) {
    svgs += await f.evaluate(() => document.querySelectorAll('svg').length);
    boxes += await f.evaluate(() => document.querySelectorAll('#frames > g').length);
  }
}
const frames = page.frames().length - 1;
if (png) {
  await page.screenshot({ path: png, fullPage: true });
  const el = await page.$('iframe');
  if (el) await el.screenshot({ path: png.replace(/\.png$/, '-flamegraph.png') });
}
await browser.close();
server.close();
const burn = text.includes('Workloads.Cpu.Burn');
console.log(JSON.stringify({ errors, external_requests: requests, svgs, flame_boxes: boxes, frames, has_burn: burn, text: burn ? 'Workloads.Cpu.Burn found' : text.slice(0, 200) }));
