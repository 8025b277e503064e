//! `clrspy top`: to be written.
