//! The bundle's `index.html`: one page that opens offline (no script or style from outside)
//! and links every file, with the checklist on top and the metrics charts inline.
//!
//! OWNER: helper PACKAGE.
