//! `clrspy doctor`.
//!
//! OWNER: helper DOCTOR.
