//! Turning a staging folder into the bundle: checksums, `MANIFEST.md`, `manifest.json`,
//! `index.html`, and the zip, written owner-only.
//!
//! OWNER: helper PACKAGE.
