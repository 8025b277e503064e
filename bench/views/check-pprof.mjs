import { Profile } from 'pprof-format';
import fs from 'fs';
import zlib from 'zlib';
const buf = zlib.gunzipSync(fs.readFileSync(process.argv[2]));
const p = Profile.decode(buf);
const st = p.stringTable.strings;
console.log('types', p.sampleType.map(t => st[t.type] + '/' + st[t.unit]).join(','));
const fn = new Map(p.function.map(f => [Number(f.id), st[f.name]]));
const loc = new Map(p.location.map(l => [Number(l.id), fn.get(Number(l.line[0].functionId))]));
const self = new Map();
for (const s of p.sample) { const leaf = loc.get(Number(s.locationId[0])); self.set(leaf, (self.get(leaf)||0) + Number(s.value[1])); }
const top = [...self.entries()].sort((a,b)=>b[1]-a[1]).slice(0,3);
console.log('top', JSON.stringify(top));
