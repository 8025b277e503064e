// TraceEventHarness: runs the reference reader (Microsoft.Diagnostics.Tracing.TraceEvent 4.0.0)
// over a .nettrace file so clrspy's reader can be compared with it (counts, decoded fields, speed).
// See bench/README.md for the commands and the output formats.
using System.Diagnostics;
using System.Globalization;
using System.Reflection;
using System.Reflection.Emit;
using System.Runtime.InteropServices;
using System.Text;
using System.Text.Json;
using Microsoft.Diagnostics.Tracing;
using Microsoft.Diagnostics.Tracing.EventPipe;
using Microsoft.Diagnostics.Tracing.Parsers;
using Microsoft.Diagnostics.Tracing.Parsers.Clr;

namespace TraceEventHarness;

internal static class Program
{
    private const string Usage =
        "usage:\n" +
        "  TraceEventHarness counts TRACE [--raw]\n" +
        "  TraceEventHarness fields TRACE [--max N] [--provider P] [--stacks]\n" +
        "  TraceEventHarness bench TRACE\n" +
        "  TraceEventHarness write-check TRACE\n" +
        "  TraceEventHarness cpu-top TRACE [--top N]\n" +
        "  TraceEventHarness gc-stats TRACE\n";

    private static readonly JsonWriterOptions JsonOpts = new()
    {
        Indented = false,
        Encoder = System.Text.Encodings.Web.JavaScriptEncoder.UnsafeRelaxedJsonEscaping,
    };

    private static int Main(string[] args)
    {
        CultureInfo.DefaultThreadCurrentCulture = CultureInfo.InvariantCulture;
        CultureInfo.CurrentCulture = CultureInfo.InvariantCulture;
        if (args.Length < 2)
        {
            Console.Error.Write(Usage);
            return 2;
        }
        string cmd = args[0];
        string path = args[1];
        var opts = args.Skip(2).ToList();
        if (!File.Exists(path))
        {
            Console.Error.WriteLine($"no such file: {path}");
            return 2;
        }
        try
        {
            return cmd switch
            {
                "counts" => Counts(path, raw: opts.Contains("--raw"), strict: false),
                "write-check" => Counts(path, raw: false, strict: true),
                "fields" => Fields(path, IntOpt(opts, "--max", 5), StrOpt(opts, "--provider"), opts.Contains("--stacks")),
                "bench" => Bench(path),
                "cpu-top" => CpuTop.Run(path, IntOpt(opts, "--top", 50)),
                "gc-stats" => GcStats.Run(path),
                _ => UsageError(),
            };
        }
        catch (ArgumentException e) when (e.Message.StartsWith("option"))
        {
            Console.Error.WriteLine(e.Message);
            return 2;
        }
    }

    private static int UsageError()
    {
        Console.Error.Write(Usage);
        return 2;
    }

    private static int IntOpt(List<string> opts, string name, int dflt)
    {
        int i = opts.IndexOf(name);
        if (i < 0) return dflt;
        if (i + 1 >= opts.Count || !int.TryParse(opts[i + 1], out int v)) throw new ArgumentException($"option {name} needs a number");
        return v;
    }

    private static string? StrOpt(List<string> opts, string name)
    {
        int i = opts.IndexOf(name);
        if (i < 0) return null;
        if (i + 1 >= opts.Count) throw new ArgumentException($"option {name} needs a value");
        return opts[i + 1];
    }

    /// Registers every typed parser that applies to EventPipe traces, so that TraceEvent picks the
    /// typed template (and its event name) for each event. Callbacks are empty: events are observed
    /// through AllEvents, which fires exactly once per dispatched event.
    private static void RegisterParsers(EventPipeEventSource source)
    {
        source.Clr.All += Ignore;
        new ClrRundownTraceEventParser(source).All += Ignore;
        new ClrPrivateTraceEventParser(source).All += Ignore;
        new SampleProfilerTraceEventParser(source).All += Ignore;
        source.Dynamic.All += Ignore;
    }

    private static void Ignore(TraceEvent _) { }

    private readonly record struct Key(string Provider, int Id, int Version);

    private sealed class KindCount
    {
        public string Name = "";
        public long Count;
    }

    // ---------------------------------------------------------------- counts / write-check

    private static int Counts(string path, bool raw, bool strict)
    {
        var perKind = new Dictionary<Key, KindCount>();
        long total = 0;
        int firstPid = -1;
        Exception? error = null;
        long decodeErrors = 0;
        var undescribed = new SortedDictionary<string, long>(StringComparer.Ordinal);
        EventPipeEventSource? source = null;
        try
        {
            source = new EventPipeEventSource(path);
            if (!raw) RegisterParsers(source);
            source.AllEvents += data =>
            {
                total++;
                if (firstPid < 0) firstPid = data.ProcessID;
                var key = new Key(data.ProviderName, (int)data.ID, data.Version);
                if (!perKind.TryGetValue(key, out var kc))
                {
                    kc = new KindCount { Name = data.EventName };
                    perKind[key] = kc;
                }
                kc.Count++;
                if (strict)
                {
                    // write-check also decodes every field: a payload TraceEvent cannot decode is a failure.
                    try
                    {
                        var names = data.PayloadNames;
                        for (int i = 0; i < names.Length; i++) _ = data.PayloadValue(i);
                        if (names.Length == 0 && data.EventDataLength > 0)
                        {
                            // Payload bytes that no field describes (metadata without fields, or metadata
                            // TraceEvent could not parse and silently replaced by an empty field list).
                            string k = $"{key.Provider}/{key.Id}/v{key.Version}";
                            undescribed[k] = undescribed.GetValueOrDefault(k) + 1;
                        }
                    }
                    catch (Exception e)
                    {
                        decodeErrors++;
                        if (decodeErrors <= 5)
                            Console.Error.WriteLine($"decode error in {key.Provider}/{key.Id} v{key.Version} ({data.EventName}) @{data.TimeStampRelativeMSec:F3}ms: {e.GetType().Name}: {e.Message}");
                    }
                }
            };
            source.Process();
        }
        catch (Exception e)
        {
            error = e;
        }

        using var stdout = Console.OpenStandardOutput();
        using (var w = new Utf8JsonWriter(stdout, JsonOpts))
        {
            w.WriteStartObject();
            w.WriteString("trace", path);
            w.WriteNumber("events", total);
            w.WriteStartArray("per_event");
            foreach (var (k, kc) in perKind.OrderBy(p => p.Key.Provider, StringComparer.Ordinal).ThenBy(p => p.Key.Id).ThenBy(p => p.Key.Version))
            {
                w.WriteStartObject();
                w.WriteString("provider", k.Provider);
                w.WriteNumber("event_id", k.Id);
                w.WriteNumber("version", k.Version);
                w.WriteString("name", kc.Name);
                w.WriteNumber("count", kc.Count);
                w.WriteEndObject();
            }
            w.WriteEndArray();
            WriteSourceInfo(w, source, firstPid);
            if (error != null)
            {
                w.WriteString("error", $"{error.GetType().FullName}: {error.Message}");
            }
            if (strict)
            {
                w.WriteNumber("decode_errors", decodeErrors);
                w.WriteStartObject("undescribed_payloads");
                foreach (var (k, n) in undescribed) w.WriteNumber(k, n);
                w.WriteEndObject();
            }
            w.WriteEndObject();
        }
        stdout.WriteByte((byte)'\n');
        source?.Dispose();

        if (error != null)
        {
            Console.Error.WriteLine($"TraceEvent threw after {total} events: {error}");
            return strict ? 1 : 0;
        }
        if (strict && decodeErrors > 0)
        {
            Console.Error.WriteLine($"TraceEvent failed to decode the payload of {decodeErrors} events");
            return 1;
        }
        return 0;
    }

    private static void WriteSourceInfo(Utf8JsonWriter w, EventPipeEventSource? source, int firstPid)
    {
        if (source == null)
        {
            w.WriteNull("lost_events");
            return;
        }
        w.WriteNumber("lost_events", Safe(() => source.EventsLost, -1));
        w.WriteNumber("pointer_size", Safe(() => source.PointerSize, -1));
        int pid = Safe(() => (int?)Private(source, "_processId") ?? -1, -1);
        w.WriteNumber("process_id", pid > 0 ? pid : firstPid);
        w.WriteNumber("cpus", Safe(() => source.NumberOfProcessors, -1));
        w.WriteString("session_start_utc", Safe(() => source.SessionStartTime.ToUniversalTime().ToString("o"), ""));
        w.WriteNumber("duration_ms", Safe(() => source.SessionDuration.TotalMilliseconds, -1));
        w.WriteNumber("format_version", Safe(() => (int?)PrivateProp(source, "FileFormatVersionNumber") ?? -1, -1));
        var kv = Safe(() => source.HeaderKeyValuePairs, null);
        if (kv != null && kv.Count > 0)
        {
            w.WriteStartObject("header");
            foreach (var (k, v) in kv) w.WriteString(k, v);
            w.WriteEndObject();
        }
    }

    private static T Safe<T>(Func<T> f, T dflt)
    {
        try { return f(); } catch { return dflt; }
    }

    private static object? Private(object o, string field)
    {
        for (var t = o.GetType(); t != null; t = t.BaseType)
        {
            var f = t.GetField(field, BindingFlags.Instance | BindingFlags.NonPublic | BindingFlags.DeclaredOnly);
            if (f != null) return f.GetValue(o);
        }
        return null;
    }

    private static object? PrivateProp(object o, string prop)
    {
        var p = o.GetType().GetProperty(prop, BindingFlags.Instance | BindingFlags.NonPublic | BindingFlags.Public);
        return p?.GetValue(o);
    }

    // ---------------------------------------------------------------- fields

    private static int Fields(string path, int max, string? provider, bool stacks)
    {
        var seen = new Dictionary<Key, int>();
        using var stdout = Console.OpenStandardOutput();
        using var buffered = new BufferedStream(stdout, 1 << 16);
        using var w = new Utf8JsonWriter(buffered, JsonOpts);
        var stackReader = stacks ? new StackReader() : null;
        Exception? error = null;
        try
        {
            using var source = new EventPipeEventSource(path);
            RegisterParsers(source);
            source.AllEvents += data =>
            {
                if (data is UnhandledTraceEvent) return; // no typed template: nothing decoded
                if (provider != null && !string.Equals(provider, data.ProviderName, StringComparison.OrdinalIgnoreCase)) return;
                var key = new Key(data.ProviderName, (int)data.ID, data.Version);
                seen.TryGetValue(key, out int n);
                if (n >= max) return;
                seen[key] = n + 1;
                w.WriteStartObject();
                w.WriteString("provider", key.Provider);
                w.WriteNumber("event_id", key.Id);
                w.WriteNumber("version", key.Version);
                w.WriteString("name", data.EventName);
                w.WriteNumber("timestamp_ns", (long)Math.Round(data.TimeStampRelativeMSec * 1e6));
                w.WriteNumber("timestamp_qpc", data.TimeStampQPC);
                w.WriteNumber("thread_id", data.ThreadID);
                w.WriteString("parser", data.GetType().Name);
                w.WriteStartObject("fields");
                string[] names = data.PayloadNames ?? Array.Empty<string>();
                for (int i = 0; i < names.Length; i++)
                {
                    w.WritePropertyName(names[i]);
                    object? v;
                    try { v = data.PayloadValue(i); }
                    catch (Exception e) { w.WriteStringValue($"<error: {e.GetType().Name}: {e.Message}>"); continue; }
                    WriteValue(w, v, 0);
                }
                w.WriteEndObject();
                if (stackReader != null)
                {
                    var ips = stackReader.Read(data);
                    if (ips != null)
                    {
                        w.WriteStartArray("stack");
                        foreach (var ip in ips) w.WriteStringValue("0x" + ip.ToString("x"));
                        w.WriteEndArray();
                    }
                }
                w.WriteEndObject();
                w.Flush();
                buffered.WriteByte((byte)'\n');
                w.Reset(buffered); // one JSON document per line
            };
            source.Process();
        }
        catch (Exception e)
        {
            error = e;
        }
        w.Flush();
        buffered.Flush();
        if (error != null)
        {
            Console.Error.WriteLine($"TraceEvent threw: {error.GetType().FullName}: {error.Message}");
            return 1;
        }
        return 0;
    }

    private static void WriteValue(Utf8JsonWriter w, object? v, int depth)
    {
        switch (v)
        {
            case null: w.WriteNullValue(); break;
            case string s: w.WriteStringValue(s); break;
            case bool b: w.WriteBooleanValue(b); break;
            case byte x: w.WriteNumberValue(x); break;
            case sbyte x: w.WriteNumberValue(x); break;
            case short x: w.WriteNumberValue(x); break;
            case ushort x: w.WriteNumberValue(x); break;
            case int x: w.WriteNumberValue(x); break;
            case uint x: w.WriteNumberValue(x); break;
            case long x: w.WriteNumberValue(x); break;
            case ulong x: w.WriteNumberValue(x); break;
            case char c: w.WriteStringValue(c.ToString()); break;
            case float f:
                if (float.IsFinite(f)) w.WriteNumberValue(f); else w.WriteStringValue(f.ToString(CultureInfo.InvariantCulture));
                break;
            case double d:
                if (double.IsFinite(d)) w.WriteNumberValue(d); else w.WriteStringValue(d.ToString(CultureInfo.InvariantCulture));
                break;
            case decimal m: w.WriteNumberValue(m); break;
            case IntPtr p: w.WriteNumberValue((long)p); break;
            case UIntPtr p: w.WriteNumberValue((ulong)p); break;
            case Guid g: w.WriteStringValue(g.ToString("D")); break;
            case DateTime t: w.WriteStringValue(t.ToUniversalTime().ToString("o")); break;
            case byte[] bytes: w.WriteStringValue("0x" + Convert.ToHexStringLower(bytes)); break;
            case Enum e:
                // Typed parsers return enums (e.g. GCReason); write the underlying number so a raw reader compares.
                if (Convert.GetTypeCode(e) is TypeCode.UInt64) w.WriteNumberValue(Convert.ToUInt64(e));
                else w.WriteNumberValue(Convert.ToInt64(e));
                break;
            case System.Collections.IDictionary dict when depth < 8:
                w.WriteStartObject();
                foreach (System.Collections.DictionaryEntry de in dict)
                {
                    w.WritePropertyName(de.Key?.ToString() ?? "");
                    WriteValue(w, de.Value, depth + 1);
                }
                w.WriteEndObject();
                break;
            case System.Collections.IEnumerable list when depth < 8:
                w.WriteStartArray();
                foreach (var item in list) WriteValue(w, item, depth + 1);
                w.WriteEndArray();
                break;
            default: w.WriteStringValue(v.ToString()); break;
        }
    }

    // ---------------------------------------------------------------- bench

    private static int Bench(string path)
    {
        // Pass (a): dispatch every event, touch its header fields and its raw stack.
        long events = 0, checksum = 0, withStack = 0, frames = 0;
        var stackReader = new StackReader();
        var sw = Stopwatch.StartNew();
        using (var source = new EventPipeEventSource(path))
        {
            source.AllEvents += data =>
            {
                events++;
                checksum += data.TimeStampQPC + data.ThreadID + data.ProviderName.Length;
                int n = stackReader.Touch(data, ref checksum);
                if (n > 0) { withStack++; frames += n; }
            };
            source.Process();
        }
        double walk = sw.Elapsed.TotalSeconds;

        // Pass (b): typed parsers registered, every payload field decoded.
        long decoded = 0, values = 0, errors = 0;
        sw.Restart();
        using (var source = new EventPipeEventSource(path))
        {
            RegisterParsers(source);
            source.AllEvents += data =>
            {
                decoded++;
                checksum += data.TimeStampQPC + data.ThreadID + data.ProviderName.Length;
                var names = data.PayloadNames;
                if (names == null) return;
                for (int i = 0; i < names.Length; i++)
                {
                    try
                    {
                        var v = data.PayloadValue(i);
                        if (v != null) values++;
                    }
                    catch { errors++; }
                }
            };
            source.Process();
        }
        double decode = sw.Elapsed.TotalSeconds;

        using var stdout = Console.OpenStandardOutput();
        using (var w = new Utf8JsonWriter(stdout, JsonOpts))
        {
            w.WriteStartObject();
            w.WriteString("trace", path);
            w.WriteNumber("events", events);
            w.WriteNumber("seconds_walk", Math.Round(walk, 4));
            w.WriteNumber("seconds_decode", Math.Round(decode, 4));
            w.WriteNumber("peak_working_set_mb", Math.Round(Process.GetCurrentProcess().PeakWorkingSet64 / 1048576.0, 1));
            w.WriteNumber("file_mb", Math.Round(new FileInfo(path).Length / 1048576.0, 1));
            w.WriteNumber("events_with_stack", withStack);
            w.WriteNumber("stack_frames", frames);
            w.WriteNumber("decoded_events", decoded);
            w.WriteNumber("decoded_values", values);
            w.WriteNumber("decode_errors", errors);
            w.WriteNumber("checksum", checksum);
            w.WriteEndObject();
        }
        stdout.WriteByte((byte)'\n');
        return 0;
    }
}

/// Reads the raw stack (instruction pointers) TraceEvent attached to an event.
///
/// TraceEvent 4.0.0 has no public API for this on EventPipeEventSource: the stack is only reachable
/// through TraceLog (CallStackIndex), which needs an ETLX conversion. Internally EventPipeEventSource
/// puts the stack into the ETW-style EVENT_RECORD as an extended data item of type STACK_TRACE64/32
/// (an 8-byte unused MatchId followed by the IPs). This class reads the internal `eventRecord`
/// pointer with a small dynamic method and walks those items; layouts are taken from TraceEvent's own
/// internal structs by reflection. Note TraceEvent drops stacks of rundown events and of CLR method
/// events 140-144 and 190 on purpose.
internal sealed class StackReader
{
    private readonly Func<TraceEvent, IntPtr>? _getRecord;
    private readonly int _offCount, _offExt, _itemSize, _offType, _offSize, _offPtr;
    private const ushort StackTrace32 = 5, StackTrace64 = 6;

    public StackReader()
    {
        try
        {
            var asm = typeof(TraceEvent).Assembly;
            var recType = asm.GetType("Microsoft.Diagnostics.Tracing.TraceEventNativeMethods+EVENT_RECORD")!;
            var itemType = asm.GetType("Microsoft.Diagnostics.Tracing.TraceEventNativeMethods+EVENT_HEADER_EXTENDED_DATA_ITEM")!;
            _offCount = (int)Marshal.OffsetOf(recType, "ExtendedDataCount");
            _offExt = (int)Marshal.OffsetOf(recType, "ExtendedData");
            _itemSize = Marshal.SizeOf(itemType);
            _offType = (int)Marshal.OffsetOf(itemType, "ExtType");
            _offSize = (int)Marshal.OffsetOf(itemType, "DataSize");
            _offPtr = (int)Marshal.OffsetOf(itemType, "DataPtr");
            var field = typeof(TraceEvent).GetField("eventRecord", BindingFlags.Instance | BindingFlags.NonPublic)!;
            var dm = new DynamicMethod("GetEventRecord", typeof(IntPtr), new[] { typeof(TraceEvent) }, typeof(StackReader).Module, skipVisibility: true);
            var il = dm.GetILGenerator();
            il.Emit(OpCodes.Ldarg_0);
            il.Emit(OpCodes.Ldfld, field);
            il.Emit(OpCodes.Ret);
            _getRecord = dm.CreateDelegate<Func<TraceEvent, IntPtr>>();
        }
        catch
        {
            _getRecord = null;
        }
    }

    public bool Available => _getRecord != null;

    /// Sums the IPs into checksum; returns the number of frames (0 when the event has no stack).
    public unsafe int Touch(TraceEvent data, ref long checksum)
    {
        if (!Find(data, out byte* p, out int n, out int ptrSize)) return 0;
        for (int i = 0; i < n; i++)
            checksum += ptrSize == 8 ? *(long*)(p + 8 * i) : *(int*)(p + 4 * i);
        return n;
    }

    public unsafe List<ulong>? Read(TraceEvent data)
    {
        if (!Find(data, out byte* p, out int n, out int ptrSize)) return null;
        var list = new List<ulong>(n);
        for (int i = 0; i < n; i++)
            list.Add(ptrSize == 8 ? *(ulong*)(p + 8 * i) : *(uint*)(p + 4 * i));
        return list;
    }

    private unsafe bool Find(TraceEvent data, out byte* ips, out int frames, out int ptrSize)
    {
        ips = null; frames = 0; ptrSize = 0;
        if (_getRecord == null) return false;
        byte* rec = (byte*)_getRecord(data);
        if (rec == null) return false;
        int count = *(ushort*)(rec + _offCount);
        byte* items = *(byte**)(rec + _offExt);
        if (count == 0 || items == null) return false;
        for (int i = 0; i < count; i++)
        {
            byte* item = items + i * _itemSize;
            ushort type = *(ushort*)(item + _offType);
            if (type != StackTrace64 && type != StackTrace32) continue;
            ptrSize = type == StackTrace64 ? 8 : 4;
            int size = *(ushort*)(item + _offSize) - 8; // skip the unused MatchId
            ips = (byte*)*(ulong*)(item + _offPtr) + 8;
            frames = Math.Max(0, size / ptrSize);
            return frames > 0;
        }
        return false;
    }
}
