//! The commands: `clrspy bundle`, `clrspy bundle verify`, `clrspy doctor`.
