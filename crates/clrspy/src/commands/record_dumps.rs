//! `record`'s dump flags (`--dump-on-exception`, `--dump-on-crash` and their options) as
//! clrspy-collect's `DumpOptions`, and what the dumps did printed on the terminal (the texts are
//! clrspy-live's `recording::notices`).

use std::path::Path;

use clrspy_collect::{DumpOptions, DumpOptionsError, DumpOutcome};
use clrspy_live::recording::notices::{crash_text, dump_notice, dumps_line};

use crate::cli::RecordArgs;
use crate::output::CliError;

/// The dump options of `record`'s flags; `dir` overrides `--dump-dir` (`--children`: the
/// traces' directory).
pub(crate) fn dump_options(args: &RecordArgs, dir: Option<&Path>) -> DumpOptions {
    DumpOptions {
        on_exception: args.dump_on_exception.clone(),
        max: args.max_dumps,
        kind: args.dump_type.value,
        compress: args.dump_compress,
        dir: args.dump_dir.as_deref().or(dir).map(Path::to_path_buf),
        hold_hook: args.dump_hold_hook.clone(),
        crash_report: args.dump_crash_report,
    }
}

/// The user's error for dump options that cannot be used.
pub(crate) fn options_error(e: DumpOptionsError) -> CliError {
    let err = CliError::new(e.to_string()).code(2);
    match e {
        DumpOptionsError::NoHook(_) => {
            err.hint("build it with hooks/build.sh (needs the .NET SDK)")
        }
        _ => err,
    }
}

/// What the dump worker says, printed as it says it.
pub(crate) fn say_dumps() -> clrspy_collect::OnDump {
    Box::new(|n| {
        for line in dump_notice(n) {
            eprintln!("{line}");
        }
    })
}

/// The closing line about the exception dumps of a recording (nothing when none were asked).
pub(crate) fn report(dumped: &[DumpOutcome]) {
    if let Some(line) = dumps_line(dumped) {
        eprintln!("{line}");
    }
}

/// After a launched program ended: prints each crash the capture found (see
/// [`clrspy_collect::CrashCapture::findings`]), its report and its compressed dump.
pub(crate) fn report_crashes(capture: &clrspy_collect::CrashCapture, trace: Option<&Path>) {
    eprint!("{}", crash_text(&capture.findings(trace)));
}
