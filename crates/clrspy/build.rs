//! Names the build in `clrspy --version`: the commit, whether the tree had changes, the date
//! (UTC) and the target, from git where the source is a checkout; `CLRSPY_BUILD_COMMIT` and
//! `SOURCE_DATE_EPOCH` (reproducible builds) take their place where it is not.

use std::process::Command;

fn git(args: &[&str]) -> Option<String> {
    let out = Command::new("git").args(args).output().ok()?;
    if !out.status.success() {
        return None;
    }
    Some(String::from_utf8_lossy(&out.stdout).trim().to_string())
}

/// Days since 1970-01-01 as a civil date (Howard Hinnant's algorithm).
fn civil(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (yoe + era * 400 + i64::from(m <= 2), m, d)
}

fn main() {
    println!("cargo:rerun-if-env-changed=CLRSPY_BUILD_COMMIT");
    println!("cargo:rerun-if-env-changed=SOURCE_DATE_EPOCH");
    println!("cargo:rerun-if-env-changed=CLRSPY_GLIBC_NEEDED");
    let commit = std::env::var("CLRSPY_BUILD_COMMIT").ok().or_else(|| {
        let head = git(&["rev-parse", "--short=12", "HEAD"])?;
        let dirty =
            git(&["status", "--porcelain", "--untracked-files=no"]).is_some_and(|s| !s.is_empty());
        Some(if dirty {
            format!("{head}+changes")
        } else {
            head
        })
    });
    if let Some(dir) = git(&["rev-parse", "--git-dir"]) {
        // A new commit or checkout changes HEAD (and the branch file it names).
        println!("cargo:rerun-if-changed={dir}/HEAD");
        // (A path that does not exist would rerun this script at every build.)
        if let Some(r) = git(&["symbolic-ref", "-q", "HEAD"]) {
            let loose = format!("{dir}/{r}");
            if std::path::Path::new(&loose).exists() {
                println!("cargo:rerun-if-changed={loose}");
            } else if std::path::Path::new(&format!("{dir}/packed-refs")).exists() {
                println!("cargo:rerun-if-changed={dir}/packed-refs");
            }
        }
    }
    let secs = std::env::var("SOURCE_DATE_EPOCH")
        .ok()
        .and_then(|s| s.parse::<i64>().ok())
        .unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_secs() as i64)
        });
    let (y, m, d) = civil(secs.div_euclid(86_400));
    let profile = std::env::var("PROFILE").unwrap_or_default();
    let target = std::env::var("TARGET").unwrap_or_default();
    println!(
        "cargo:rustc-env=CLRSPY_BUILD_COMMIT={}",
        commit.unwrap_or_else(|| "unknown".into())
    );
    println!("cargo:rustc-env=CLRSPY_BUILD_DATE={y:04}-{m:02}-{d:02}");
    println!("cargo:rustc-env=CLRSPY_BUILD_PROFILE={profile}");
    println!("cargo:rustc-env=CLRSPY_BUILD_TARGET={target}");
    // The oldest glibc the binary runs on: what dist/build.sh read from the linked binary's
    // symbol versions, else the glibc of the machine that built it (it surely runs there).
    let glibc = match std::env::var("CLRSPY_GLIBC_NEEDED") {
        Ok(v) if !v.is_empty() => format!("glibc {v} or later"),
        _ => Command::new("getconf")
            .arg("GNU_LIBC_VERSION")
            .output()
            .ok()
            .map(|o| {
                String::from_utf8_lossy(&o.stdout)
                    .trim()
                    .replace("glibc ", "")
            })
            .filter(|v| !v.is_empty())
            .map_or_else(
                || "glibc (version unknown)".to_string(),
                |v| format!("glibc {v} (built against; dist/build.sh names the oldest)"),
            ),
    };
    println!("cargo:rustc-env=CLRSPY_GLIBC={glibc}");
}
