//! `clrspy bundle verify FILE.zip`: every file's size and SHA-256 against the manifest.
//!
//! OWNER: helper PACKAGE.
