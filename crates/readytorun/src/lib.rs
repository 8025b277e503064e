//! Names for the precompiled (ReadyToRun) code of .NET images.
//!
//! A ReadyToRun image is a PE file whose CLI header points (`ManagedNativeHeader`) at a
//! ReadyToRun header; its `RuntimeFunctions` section lists the code ranges of every compiled
//! function, `MethodDefEntryPoints` maps MethodDef rows to the function where each method
//! starts, and `InstanceMethodEntryPoints` does the same for generic instantiations. With
//! the image's ECMA-335 metadata (TypeDef, MethodDef, NestedClass, `#Strings`) each code range
//! gets the name clrspy gives managed methods: `Namespace.Type.Method`, nested types as
//! `Outer+Inner`. Funclets (the handlers of a method, compiled as separate functions right
//! after it) carry their method's name.
//!
//! [`pdb`] reads the same metadata format in portable PDBs: each method's IL offsets as source
//! files and lines.
//!
//! Every read is bounds-checked: any byte string gives an [`Image`] or an [`Error`], never a
//! panic, and no allocation is sized by the input beyond what the input itself holds.
//!
//! ```no_run
//! let bytes = std::fs::read("System.Private.CoreLib.dll")?;
//! let image = readytorun::Image::parse(&bytes)?;
//! if let Some(f) = image.function_at(0x1000) {
//!     println!("{} [{:#x}, {:#x})", image.name(f), f.start, f.end);
//! }
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
#![deny(missing_docs)]
#![warn(unreachable_pub)]

mod identity;
mod metadata;
pub mod pdb;
mod reader;
mod sig;
mod statics;

use object::pe::{ImageDataDirectory, IMAGE_DIRECTORY_ENTRY_COM_DESCRIPTOR};
use object::read::pe::{ImageNtHeaders, PeFile32, PeFile64};
use object::LittleEndian as LE;

pub use identity::{assembly_identity, AssemblyIdentity};
use metadata::{t, Metadata};
use reader::{Bytes, NativeArray};
pub use statics::{static_fields, StaticField};

/// Why an image could not be read.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// Not a PE file.
    #[error("not a PE image: {0}")]
    NotPe(&'static str),
    /// A PE file without (usable) .NET metadata.
    #[error("not a .NET image: {0}")]
    NotManaged(&'static str),
    /// A .NET image without precompiled code.
    #[error("not a ReadyToRun image")]
    NotReadyToRun,
    /// A read past the end of a structure.
    #[error("{what}: {len} bytes at offset {offset:#x} are out of bounds")]
    OutOfBounds {
        /// The structure read.
        what: &'static str,
        /// Where.
        offset: u64,
        /// How many bytes.
        len: u64,
    },
    /// A value a well-formed image cannot hold.
    #[error("{what} at offset {offset:#x}: {detail}")]
    Malformed {
        /// The structure read.
        what: &'static str,
        /// Where.
        offset: u64,
        /// What was wrong.
        detail: &'static str,
    },
    /// A metadata token naming no row.
    #[error("metadata table {table:#x} has no row {row}")]
    BadToken {
        /// The table.
        table: u8,
        /// The row.
        row: u32,
    },
}

/// ReadyToRun section types (the header's section list).
mod section {
    pub(crate) const RUNTIME_FUNCTIONS: u32 = 102;
    pub(crate) const METHODDEF_ENTRYPOINTS: u32 = 103;
    pub(crate) const INSTANCE_METHOD_ENTRYPOINTS: u32 = 109;
}

/// The ReadyToRun header's signature, "RTR".
const RTR_SIGNATURE: u32 = 0x0052_5452;
/// The most functions an image may declare (a hard limit).
const MAX_FUNCTIONS: usize = 4 << 20;

/// A compiled function: a code range of the image.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Function {
    /// First RVA.
    pub start: u32,
    /// One past the last RVA.
    pub end: u32,
    /// Index of its name in the image's name table (see [`Image::name`]); `u32::MAX` when
    /// no entry point names it.
    pub name: u32,
}

/// A PE section: where its bytes are in the file and in memory.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Section {
    /// Its RVA.
    pub rva: u32,
    /// Its size in memory.
    pub virtual_size: u32,
    /// Its offset in the file.
    pub file_offset: u32,
    /// Its size in the file.
    pub file_size: u32,
}

/// The names of an image's precompiled code.
#[derive(Clone, Debug)]
pub struct Image {
    mvid: Option<[u8; 16]>,
    sections: Vec<Section>,
    /// Sorted by start.
    functions: Vec<Function>,
    /// Where each name comes from ([`Function::name`] indexes it).
    sources: Vec<Source>,
    /// The names, in the order of `sources` (empty for an image parsed without them).
    names: Vec<String>,
}

/// Where a method's name is read from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Source {
    /// A MethodDef row.
    Def(u32),
    /// An instantiation's signature, at this offset of the InstanceMethodEntryPoints section.
    Instance(u32),
}

/// What the PE and CLI headers say about an image.
struct Layout {
    sections: Vec<Section>,
    machine: u16,
    /// The metadata's directory.
    metadata: (u32, u32),
    /// The CLI header's flags.
    flags: u32,
    /// The ReadyToRun header's directory.
    native: (u32, u32),
}

fn layout(data: &[u8]) -> Result<Layout, Error> {
    let PeParts {
        sections,
        cli,
        machine,
    } = pe_parts(data)?;
    if cli.0 == 0 {
        return Err(Error::NotManaged("no CLI header"));
    }
    let rvas = Rvas {
        data,
        sections: &sections,
    };
    let c = Bytes::new(rvas.slice(cli.0, 72)?, "CLI header");
    let metadata = (c.u32(8)?, c.u32(12)?);
    let flags = c.u32(16)?;
    let native = (c.u32(64)?, c.u32(68)?);
    Ok(Layout {
        sections,
        machine,
        metadata,
        flags,
        native,
    })
}

/// The RVA space of a PE file: reads by RVA through the section table.
struct Rvas<'a, 's> {
    data: &'a [u8],
    sections: &'s [Section],
}

impl<'a> Rvas<'a, '_> {
    /// The bytes of the section holding `rva`, from `rva` to the section's end in the file,
    /// and the file offset of `rva`.
    fn at(&self, rva: u32) -> Result<(&'a [u8], usize), Error> {
        let s = self
            .sections
            .iter()
            .find(|s| rva >= s.rva && rva - s.rva < s.virtual_size.max(s.file_size))
            .ok_or(Error::OutOfBounds {
                what: "RVA",
                offset: u64::from(rva),
                len: 1,
            })?;
        let delta = rva - s.rva;
        let off = (s.file_offset as usize) + delta as usize;
        let end = (s.file_offset as usize).saturating_add(s.file_size as usize);
        let bytes = self
            .data
            .get(off..end.min(self.data.len()))
            .ok_or(Error::OutOfBounds {
                what: "section data",
                offset: off as u64,
                len: 1,
            })?;
        Ok((bytes, off))
    }

    /// The whole section holding `rva` (its bytes in the file) and `rva`'s offset in it.
    fn section(&self, rva: u32, what: &'static str) -> Result<(Bytes<'a>, usize), Error> {
        let (_, off) = self.at(rva)?;
        let s = self
            .sections
            .iter()
            .find(|s| rva >= s.rva && rva - s.rva < s.virtual_size.max(s.file_size))
            .ok_or(Error::OutOfBounds {
                what: "RVA",
                offset: u64::from(rva),
                len: 1,
            })?;
        let start = s.file_offset as usize;
        let end = start
            .saturating_add(s.file_size as usize)
            .min(self.data.len());
        let bytes = self.data.get(start..end).unwrap_or(&[]);
        Ok((Bytes::new(bytes, what), off - start))
    }

    /// `len` bytes at `rva`.
    fn slice(&self, rva: u32, len: u32) -> Result<&'a [u8], Error> {
        let (b, off) = self.at(rva)?;
        b.get(..len as usize).ok_or(Error::OutOfBounds {
            what: "RVA range",
            offset: off as u64,
            len: u64::from(len),
        })
    }
}

fn dir(d: &ImageDataDirectory) -> (u32, u32) {
    (d.virtual_address.get(LE), d.size.get(LE))
}

/// What the PE headers say.
struct PeParts {
    sections: Vec<Section>,
    /// The CLI header's directory.
    cli: (u32, u32),
    machine: u16,
}

/// True for x64 code: ReadyToRun images mark their target OS by xor-ing the machine field
/// (Windows, macOS, Linux, FreeBSD, NetBSD).
fn is_x64(machine: u16) -> bool {
    [0u16, 0x4644, 0x7B79, 0xADC4, 0x1993]
        .iter()
        .any(|os| machine ^ os == 0x8664)
}

/// The sections and the CLI header's directory of a PE file (32- or 64-bit).
fn pe_parts(data: &[u8]) -> Result<PeParts, Error> {
    fn parts<H: ImageNtHeaders>(pe: &object::read::pe::PeFile<'_, H>) -> Result<PeParts, Error> {
        let machine = pe.nt_headers().file_header().machine.get(LE).0;
        let sections = pe
            .section_table()
            .iter()
            .map(|s| Section {
                rva: s.virtual_address.get(LE),
                virtual_size: s.virtual_size.get(LE),
                file_offset: s.pointer_to_raw_data.get(LE),
                file_size: s.size_of_raw_data.get(LE),
            })
            .collect();
        let cli = pe
            .data_directory(IMAGE_DIRECTORY_ENTRY_COM_DESCRIPTOR)
            .map(dir)
            .unwrap_or((0, 0));
        Ok(PeParts {
            sections,
            cli,
            machine,
        })
    }
    match object::FileKind::parse(data) {
        Ok(object::FileKind::Pe64) => {
            let pe = PeFile64::parse(data).map_err(|_| Error::NotPe("bad PE32+ headers"))?;
            parts(&pe)
        }
        Ok(object::FileKind::Pe32) => {
            let pe = PeFile32::parse(data).map_err(|_| Error::NotPe("bad PE32 headers"))?;
            parts(&pe)
        }
        _ => Err(Error::NotPe("not a PE file")),
    }
}

/// What the ReadyToRun header's sections say.
struct R2rSections {
    runtime_functions: Option<(u32, u32)>,
    method_entry_points: Option<(u32, u32)>,
    instance_entry_points: Option<(u32, u32)>,
}

fn r2r_sections(rvas: &Rvas<'_, '_>, header: (u32, u32)) -> Result<R2rSections, Error> {
    let (hdr, _) = rvas.at(header.0)?;
    let h = Bytes::new(hdr, "ReadyToRun header");
    if h.u32(0)? != RTR_SIGNATURE {
        return Err(Error::NotReadyToRun);
    }
    let count = h.u32(12)?;
    let mut out = R2rSections {
        runtime_functions: None,
        method_entry_points: None,
        instance_entry_points: None,
    };
    for i in 0..count.min(1024) as usize {
        let at = 16 + i * 12;
        let d = (h.u32(at + 4)?, h.u32(at + 8)?);
        match h.u32(at)? {
            section::RUNTIME_FUNCTIONS => out.runtime_functions = Some(d),
            section::METHODDEF_ENTRYPOINTS => out.method_entry_points = Some(d),
            section::INSTANCE_METHOD_ENTRYPOINTS => out.instance_entry_points = Some(d),
            _ => {}
        }
    }
    Ok(out)
}

/// The runtime function index an entry point record at `offset` names (the low bits say
/// whether a fixup list follows).
fn entry_function(b: Bytes<'_>, offset: usize) -> Result<u32, Error> {
    let (id, _) = b.native_unsigned(offset)?;
    Ok(if id & 1 != 0 { id >> 2 } else { id >> 1 })
}

impl Image {
    /// Reads an image's precompiled functions and names them.
    pub fn parse(data: &[u8]) -> Result<Image, Error> {
        let mut image = Image::parse_unnamed(data)?;
        let all: Vec<u32> = (0..image.sources.len() as u32).collect();
        image.names = image.read_names(data, &all, true)?;
        Ok(image)
    }

    /// Reads an image's precompiled functions without naming them (every [`Image::name`] is
    /// `[unnamed]`): the function table and where each name is, without reading the metadata
    /// the names come from; [`Image::names_from`] names the functions a caller meets.
    pub fn parse_unnamed(data: &[u8]) -> Result<Image, Error> {
        let l = layout(data)?;
        let rvas = Rvas {
            data,
            sections: &l.sections,
        };
        let md = Metadata::parse(rvas.slice(l.metadata.0, l.metadata.1)?)?;
        let mvid = md.mvid().ok();
        if l.flags & 0x4 == 0 || l.native.0 == 0 {
            return Err(Error::NotReadyToRun);
        }
        let secs = r2r_sections(&rvas, l.native)?;
        let functions = read_functions(&rvas, is_x64(l.machine), secs.runtime_functions)?;
        let mut image = Image {
            mvid,
            sections: Vec::new(),
            functions,
            sources: Vec::new(),
            names: Vec::new(),
        };
        image.find_sources(&rvas, &md, &secs)?;
        image.sections = l.sections;
        Ok(image)
    }

    /// The names of `functions` (of this image, whose bytes `data` are: the same file it was
    /// parsed from), in order; `[unnamed]` for a function no entry point names.
    pub fn names_from(&self, data: &[u8], functions: &[Function]) -> Result<Vec<String>, Error> {
        let wanted: Vec<u32> = functions
            .iter()
            .map(|f| f.name)
            .filter(|&n| (n as usize) < self.sources.len())
            .collect();
        let mut names = self.read_names(data, &wanted, false)?.into_iter();
        Ok(functions
            .iter()
            .map(|f| {
                if (f.name as usize) < self.sources.len() {
                    names.next().unwrap_or_else(|| "[unnamed]".to_string())
                } else {
                    "[unnamed]".to_string()
                }
            })
            .collect())
    }

    /// The names of sources `which`; `strict`: a MethodDef row that cannot be named is an
    /// error (else it is `[unnamed]`).
    fn read_names(&self, data: &[u8], which: &[u32], strict: bool) -> Result<Vec<String>, Error> {
        let l = layout(data)?;
        let rvas = Rvas {
            data,
            sections: &l.sections,
        };
        let md = Metadata::parse(rvas.slice(l.metadata.0, l.metadata.1)?)?;
        let secs = r2r_sections(&rvas, l.native)?;
        let names = md.names_for(which.len())?;
        let method_name = |row: u32| -> Result<String, Error> {
            let name = md.method_name(row)?;
            let owner = names.owner(&md, row).unwrap_or(0);
            Ok(match names.type_def(&md, owner) {
                Some(ty) => format!("{ty}.{name}"),
                None => name,
            })
        };
        let instances = match secs.instance_entry_points {
            Some((rva, _)) => Some(rvas.section(rva, "InstanceMethodEntryPoints")?.0),
            None => None,
        };
        let mut out = Vec::with_capacity(which.len());
        for &i in which {
            let name = match self.sources.get(i as usize) {
                Some(&Source::Def(rid)) => match method_name(rid) {
                    Ok(n) => n,
                    Err(e) if strict => return Err(e),
                    Err(_) => "[unnamed]".to_string(),
                },
                Some(&Source::Instance(off)) => instances
                    .and_then(|b| sig::method(b, off as usize).ok())
                    .and_then(|(m, _)| sig::name(&md, &m, &names))
                    .unwrap_or_else(|| "[generic instance]".to_string()),
                None => "[unnamed]".to_string(),
            };
            out.push(name);
        }
        Ok(out)
    }

    /// Finds the entry point of every method and generic instantiation, and gives each
    /// function the source of its name.
    fn find_sources(
        &mut self,
        rvas: &Rvas<'_, '_>,
        md: &Metadata<'_>,
        secs: &R2rSections,
    ) -> Result<(), Error> {
        // The method starting at each function index, as a source index.
        let mut starts: Vec<(u32, u32)> = Vec::new();
        if let Some((rva, _)) = secs.method_entry_points {
            let (b, at) = rvas.section(rva, "MethodDefEntryPoints")?;
            let array = NativeArray::new(b, at)?;
            let n = array.count().min(md.rows(t::METHOD_DEF));
            for rid in 1..=n {
                if let Some(off) = array.get(rid - 1)? {
                    let f = entry_function(b, off)?;
                    self.sources.push(Source::Def(rid));
                    starts.push((f, self.sources.len() as u32 - 1));
                }
            }
        }
        if let Some((rva, _)) = secs.instance_entry_points {
            let (b, at) = rvas.section(rva, "InstanceMethodEntryPoints")?;
            for off in reader::hashtable_entries(b, at, MAX_FUNCTIONS)? {
                let Ok((_, after)) = sig::method(b, off) else {
                    continue;
                };
                let f = entry_function(b, after)?;
                self.sources
                    .push(Source::Instance(u32::try_from(off).unwrap_or(u32::MAX)));
                starts.push((f, self.sources.len() as u32 - 1));
            }
        }
        // Funclets follow their method: each function without an entry takes the name of
        // the closest entry before it.
        starts.sort_unstable();
        let mut by_index = vec![u32::MAX; self.functions.len()];
        for &(f, name) in &starts {
            if let Some(slot) = by_index.get_mut(f as usize) {
                *slot = name;
            }
        }
        let mut last = u32::MAX;
        for (slot, func) in by_index.iter().zip(self.functions.iter_mut()) {
            if *slot != u32::MAX {
                last = *slot;
            }
            func.name = last;
        }
        // The table is in function order; keep it sorted by address for lookups.
        self.functions.sort_by_key(|f| f.start);
        Ok(())
    }

    /// The image's MVID (its metadata's module version id), when the metadata has one.
    pub fn mvid(&self) -> Option<[u8; 16]> {
        self.mvid
    }

    /// The image's sections.
    pub fn sections(&self) -> &[Section] {
        &self.sections
    }

    /// Every compiled function, sorted by start.
    pub fn functions(&self) -> &[Function] {
        &self.functions
    }

    /// The name of a function (`[unnamed]` when no entry point names it).
    pub fn name(&self, f: &Function) -> &str {
        self.names.get(f.name as usize).map_or("[unnamed]", |s| s)
    }

    /// The function whose code holds `rva`.
    pub fn function_at(&self, rva: u32) -> Option<&Function> {
        let i = self.functions.partition_point(|f| f.start <= rva);
        let f = self.functions.get(i.checked_sub(1)?)?;
        (rva < f.end).then_some(f)
    }

    /// The file offset of an RVA (through the section table).
    pub fn file_offset_of_rva(&self, rva: u32) -> Option<u32> {
        self.sections.iter().find_map(|s| {
            let delta = rva.checked_sub(s.rva)?;
            (delta < s.file_size.min(s.virtual_size.max(1)))
                .then(|| s.file_offset.checked_add(delta))
                .flatten()
        })
    }

    /// The RVA of a file offset (through the section table).
    pub fn rva_of_file_offset(&self, offset: u64) -> Option<u32> {
        self.sections.iter().find_map(|s| {
            let delta = offset.checked_sub(u64::from(s.file_offset))?;
            (delta < u64::from(s.file_size.min(s.virtual_size.max(1))))
                .then(|| s.rva.checked_add(delta as u32))
                .flatten()
        })
    }
}

/// The RuntimeFunctions table: (begin, end, unwind) triples on x64, (begin, unwind) pairs
/// elsewhere (the end is then the next function's start).
fn read_functions(
    rvas: &Rvas<'_, '_>,
    wide: bool,
    dir: Option<(u32, u32)>,
) -> Result<Vec<Function>, Error> {
    let Some((rva, size)) = dir else {
        return Ok(Vec::new());
    };
    let b = Bytes::new(rvas.slice(rva, size)?, "RuntimeFunctions");
    let step = if wide { 12 } else { 8 };
    let n = (size as usize / step).min(MAX_FUNCTIONS);
    let mut out = Vec::with_capacity(n);
    for i in 0..n {
        let start = b.u32(i * step)?;
        let end = if wide {
            b.u32(i * step + 4)?
        } else {
            match b.u32((i + 1) * step) {
                Ok(next) => next,
                Err(_) => start.saturating_add(1),
            }
        };
        out.push(Function {
            start,
            end: end.max(start),
            name: u32::MAX,
        });
    }
    Ok(out)
}

#[cfg(test)]
mod tests;
