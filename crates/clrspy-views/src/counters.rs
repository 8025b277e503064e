//! `clrspy counters`: to be written.
