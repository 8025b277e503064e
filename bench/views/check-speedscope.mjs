// Loads a speedscope file in speedscope itself (the npm package's app) in headless Chromium
// and reads back what it shows: the document title (speedscope puts the profile's name there),
// the profiles it offers, and console errors. Usage: node check-speedscope.mjs FILE PNG
import puppeteer from 'puppeteer-core';
import path from 'path';
import http from 'http';
import fs from 'fs';
const file = path.resolve(process.argv[2]);
const png = process.argv[3];
const appDir = path.resolve('node_modules/speedscope/dist/release');
// Serve the app and the profile on loopback (file:// pages cannot fetch files).
const types = { '.html': 'text/html', '.js': 'text/javascript', '.css': 'text/css', '.json': 'application/json', '.wasm': 'application/wasm' };
const server = http.createServer((req, res) => {
  const u = decodeURIComponent(req.url.split('?')[0]);
  const f = u === '/profile.json' ? file : path.join(appDir, u === '/' ? 'index.html' : u);
  fs.readFile(f, (err, data) => {
    if (err) { res.writeHead(404); res.end(); return; }
    res.writeHead(200, { 'Content-Type': types[path.extname(f)] || 'application/octet-stream' });
    res.end(data);
  });
});
await new Promise(r => server.listen(0, '127.0.0.1', r));
const port = server.address().port;
const browser = await puppeteer.launch({
  executablePath: '/usr/bin/chromium',
  headless: true, args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage', '--no-zygote', '--single-process', '--allow-file-access-from-files'],
});
const page = await browser.newPage();
await page.setViewport({ width: 1400, height: 900 });
const errors = [];
page.on('console', m => { if (m.type() === 'error') errors.push(m.text()); });
page.on('pageerror', e => errors.push(String(e)));
await page.goto(`http://127.0.0.1:${port}/#profileURL=${encodeURIComponent(`http://127.0.0.1:${port}/profile.json`)}`, { waitUntil: 'domcontentloaded' });
await page.waitForFunction(() => document.title && !/^speedscope$/.test(document.title), { timeout: 20000 });
await new Promise(r => setTimeout(r, 1500));
const title = await page.title();
const text = await page.evaluate(() => document.body.innerText);
if (png) await page.screenshot({ path: png });
await browser.close();
server.close();
// The heaviest leaf frame of the first profile, from the file speedscope just loaded.
const doc = JSON.parse(fs.readFileSync(file, 'utf8'));
const prof = doc.profiles[0];
const self = new Map();
prof.samples.forEach((s, i) => { const leaf = doc.shared.frames[s[s.length - 1]].name; self.set(leaf, (self.get(leaf) || 0) + prof.weights[i]); });
const top = [...self.entries()].sort((a, b) => b[1] - a[1])[0]?.[0];
console.log(JSON.stringify({ title, errors, top_leaf: top, text: text.slice(0, 400) }));
