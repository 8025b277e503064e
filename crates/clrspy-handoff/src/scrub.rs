//! Redaction of what goes into a bundle.
//!
//! OWNER: helper SCRUB.
