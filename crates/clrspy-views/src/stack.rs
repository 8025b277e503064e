//! `clrspy stack`: to be written.
