using System.Diagnostics;

namespace Workloads;

// ------------------------------------------------------------------ hang-busy

/// The `hang` deadlock inside a process whose other threads burn CPU on every core: what a
/// stack snapshot of a stuck, busy service meets (the sampler must suspend a runtime whose
/// threads run managed code all the time).
public static class BusyHang
{
    public static int Run(Options o)
    {
        int n = o.Threads ?? Environment.ProcessorCount;
        for (int t = 0; t < n; t++)
        {
            // Burn until the process ends (background threads; 1e6 s is "for ever" here).
            new Thread(() => Cpu.Burn(1e6)) { Name = $"busy-{t}", IsBackground = true }.Start();
        }
        Program.Out(FormattableString.Invariant($"burners={n}"));
        return Deadlock.Run(o);
    }
}
