// The `loadfail` scenario: assembly loads that go wrong or twice, for `clrspy report loader`
// (see testapps/README.md: the names and printed lines are part of the tests' contract).
using System.Reflection;
using System.Reflection.Emit;
using System.Runtime.Loader;

namespace Workloads;

public static class LoadFail
{
    public const string MissingName = "Missing.Assembly, Version=1.2.3.4";
    public const string DependencyName = "Workloads.Plugin.Dependency";
    public const string PluginName = "Workloads.Plugin";

    public static int Run(Options o)
    {
        // 1. A missing assembly: probed in the app's paths, not found.
        try
        {
            Assembly.Load(MissingName);
            Program.Out("missing=loaded");
            return 1;
        }
        catch (FileNotFoundException)
        {
            Program.Out("missing=FileNotFoundException");
        }

        // 2. This program's own dll loaded again from its path into a second context, twice
        // (the second load finds it in the context's cache).
        string self = typeof(Program).Assembly.Location;
        var second = new AssemblyLoadContext("loadfail-second", isCollectible: true);
        Assembly a = second.LoadFromAssemblyPath(self);
        Assembly b = second.LoadFromAssemblyPath(self);
        Program.Out($"second={a.GetName().Name} same={ReferenceEquals(a, b)}");

        // 3. Two versions of one assembly, written to disk here, each in its own context; the
        // second reached through a Resolving handler after the context's own lookup fails.
        string dir = Path.Combine(Path.GetTempPath(), $"clrspy-loadfail-{Environment.ProcessId}");
        Directory.CreateDirectory(dir);
        try
        {
            string v1 = Emit(dir, new Version(1, 0, 0, 0));
            string v2 = Emit(dir, new Version(2, 0, 0, 0));
            var one = new AssemblyLoadContext("loadfail-v1", isCollectible: true);
            Assembly p1 = one.LoadFromAssemblyPath(v1);
            var two = new AssemblyLoadContext("loadfail-v2", isCollectible: true);
            two.Resolving += (context, name) =>
                name.Name == PluginName ? context.LoadFromAssemblyPath(v2) : null;
            Assembly p2 = two.LoadFromAssemblyName(new AssemblyName($"{PluginName}, Version=2.0.0.0"));
            Program.Out($"plugin v1={p1.GetName().Version} v2={p2.GetName().Version}");

            // 4. Version 1 loaded with Assembly.LoadFrom asks for a dependency that is not next
            // to it: the runtime's LoadFrom handler probes the plugin's folder for it.
            Assembly from = Assembly.LoadFrom(v1);
            try
            {
                from.GetType("Workloads.Plugin.Thing")!.GetMethod("LoadDependency")!.Invoke(null, null);
                Program.Out("dependency=loaded");
                return 1;
            }
            catch (TargetInvocationException e) when (e.InnerException is FileNotFoundException)
            {
                Program.Out($"dependency=FileNotFoundException probed={Path.Combine(dir, DependencyName + ".dll")}");
            }
            second.Unload();
            one.Unload();
            two.Unload();
        }
        finally
        {
            try { Directory.Delete(dir, true); } catch (IOException) { }
        }
        return 0;
    }

    /// Writes an assembly `Workloads.Plugin` of version `v` with one empty type; its path.
    private static string Emit(string dir, Version v)
    {
        var builder = new PersistedAssemblyBuilder(new AssemblyName(PluginName) { Version = v }, typeof(object).Assembly);
        ModuleBuilder module = builder.DefineDynamicModule(PluginName);
        TypeBuilder type = module.DefineType("Workloads.Plugin.Thing", TypeAttributes.Public | TypeAttributes.Class);
        // public static void LoadDependency() => Assembly.Load("Workloads.Plugin.Dependency");
        MethodBuilder method = type.DefineMethod("LoadDependency", MethodAttributes.Public | MethodAttributes.Static, typeof(void), Type.EmptyTypes);
        ILGenerator il = method.GetILGenerator();
        il.Emit(OpCodes.Ldstr, DependencyName);
        il.Emit(OpCodes.Call, typeof(Assembly).GetMethod(nameof(Assembly.Load), [typeof(string)])!);
        il.Emit(OpCodes.Pop);
        il.Emit(OpCodes.Ret);
        type.CreateType();
        string path = Path.Combine(dir, $"{PluginName}.{v}.dll");
        builder.Save(path);
        return path;
    }
}
