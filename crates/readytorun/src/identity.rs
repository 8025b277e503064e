//! An assembly's identity as its metadata states it: the Assembly row's name and version
//! (`AssemblyVersion`), and the `AssemblyInformationalVersionAttribute` on the assembly (the
//! product version, which the .NET SDK suffixes with the source revision: often the build's
//! commit). Works on any managed PE image, ReadyToRun or IL only.

use crate::metadata::Metadata;
use crate::reader::Bytes;
use crate::{layout, Error, Rvas};

/// The attribute whose string argument is the informational version.
const INFORMATIONAL: &str = "System.Reflection.AssemblyInformationalVersionAttribute";

/// What an assembly says about itself.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AssemblyIdentity {
    /// Its simple name (`MyApp`).
    pub name: String,
    /// `AssemblyVersion`: `major.minor.build.revision`.
    pub version: String,
    /// `AssemblyInformationalVersion`, when the assembly carries one (`1.2.0+3f2a9c1`).
    pub informational_version: Option<String>,
}

/// Reads the identity of the managed image `data` (a `.dll` or `.exe` with .NET metadata).
///
/// ```no_run
/// let bytes = std::fs::read("MyApp.dll")?;
/// let id = readytorun::assembly_identity(&bytes)?;
/// println!("{} {} {:?}", id.name, id.version, id.informational_version);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn assembly_identity(data: &[u8]) -> Result<AssemblyIdentity, Error> {
    let l = layout(data)?;
    let rvas = Rvas {
        data,
        sections: &l.sections,
    };
    let md = Metadata::parse(rvas.slice(l.metadata.0, l.metadata.1)?)?;
    let (name, v) = md
        .assembly()?
        .ok_or(Error::NotManaged("a module without an assembly manifest"))?;
    let informational_version = md
        .assembly_attributes()?
        .into_iter()
        .find(|(ty, _)| ty == INFORMATIONAL)
        .and_then(|(_, blob)| single_string_argument(blob));
    Ok(AssemblyIdentity {
        name,
        version: format!("{}.{}.{}.{}", v[0], v[1], v[2], v[3]),
        informational_version,
    })
}

/// The first fixed argument of a custom attribute's value blob when it is a string
/// (II.23.3: prolog 0x0001, then a SerString: a compressed length and UTF-8, or 0xFF for
/// null).
fn single_string_argument(blob: &[u8]) -> Option<String> {
    let b = Bytes::new(blob, "custom attribute value");
    if b.u16(0).ok()? != 0x0001 || b.u8(2).ok()? == 0xFF {
        return None;
    }
    let (len, at) = b.compressed(2).ok()?;
    let s = b.slice(at, len as usize).ok()?;
    Some(String::from_utf8_lossy(s).into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn string_arguments_of_attribute_blobs() {
        let mut blob = vec![1, 0, 5];
        blob.extend(b"1.2.3");
        blob.extend([0, 0]); // no named arguments
        assert_eq!(single_string_argument(&blob).as_deref(), Some("1.2.3"));
        assert_eq!(single_string_argument(&[1, 0, 0xFF, 0, 0]), None);
        assert_eq!(single_string_argument(&[2, 0, 1, b'x']), None);
        // Cut short: the length says more than there is.
        assert_eq!(single_string_argument(&[1, 0, 9, b'x']), None);
        assert_eq!(single_string_argument(&[]), None);
    }

    #[test]
    fn not_managed_images_are_errors() {
        assert!(assembly_identity(b"MZ not really").is_err());
        assert!(assembly_identity(&[]).is_err());
    }

    /// The shared framework's CoreLib states its version and an informational version
    /// `VERSION[-LABEL]+COMMIT` (the runtime's build).
    #[test]
    fn corelib_identity() {
        let Some(dir) = crate::tests::framework_dir() else {
            eprintln!("no shared framework installed: skipped");
            return;
        };
        let Ok(bytes) = std::fs::read(dir.join("System.Private.CoreLib.dll")) else {
            eprintln!("no CoreLib: skipped");
            return;
        };
        let id = assembly_identity(&bytes).unwrap();
        assert_eq!(id.name, "System.Private.CoreLib");
        let folder = dir.file_name().unwrap().to_string_lossy().into_owned();
        let major = folder.split('.').next().unwrap();
        assert!(id.version.starts_with(&format!("{major}.0.0.")), "{id:?}");
        let info = id.informational_version.unwrap();
        let (product, commit) = info.split_once('+').unwrap();
        // `10.0.12-servicing.26422.108` in the folder `10.0.12`.
        assert!(product.starts_with(&folder), "{info}");
        assert!(
            commit.len() >= 7 && commit.bytes().all(|b| b.is_ascii_hexdigit()),
            "{info}"
        );
    }
}
