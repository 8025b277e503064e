// Prints every sequence point of a portable PDB (or of the PDB embedded in an image) as
// `ROW IL_OFFSET LINE COLUMN END_LINE END_COLUMN DOCUMENT`, hidden points as line 0, in IL
// order per method: what clrspy's reader must match.
using System.Reflection.Metadata;
using System.Reflection.Metadata.Ecma335;
using System.Reflection.PortableExecutable;

var path = args[0];
MetadataReaderProvider provider;
if (path.EndsWith(".dll", StringComparison.OrdinalIgnoreCase))
{
    var pe = new PEReader(File.OpenRead(path));
    var entry = pe.ReadDebugDirectory().First(e => e.Type == DebugDirectoryEntryType.EmbeddedPortablePdb);
    provider = pe.ReadEmbeddedPortablePdbDebugDirectoryData(entry);
}
else
{
    provider = MetadataReaderProvider.FromPortablePdbStream(File.OpenRead(path));
}
var reader = provider.GetMetadataReader();
var output = new StreamWriter(Console.OpenStandardOutput()) { AutoFlush = false };
foreach (var handle in reader.MethodDebugInformation)
{
    var row = MetadataTokens.GetRowNumber(handle);
    var info = reader.GetMethodDebugInformation(handle);
    var points = info.GetSequencePoints().ToList();
    foreach (var p in points.OrderBy(p => p.Offset))
    {
        var doc = reader.GetString(reader.GetDocument(p.Document).Name);
        if (p.IsHidden)
            output.WriteLine($"{row} {p.Offset} 0 0 0 0 {doc}");
        else
            output.WriteLine($"{row} {p.Offset} {p.StartLine} {p.StartColumn} {p.EndLine} {p.EndColumn} {doc}");
    }
}
output.Flush();
