//! The records the data access library fills (`Dacp*Data`), laid out as the runtime's
//! `dacprivate.h` declares them; the runtime keeps these layouts frozen.

#![allow(dead_code)] // Fields the library fills that clrspy does not read yet.

/// `DacpThreadStoreData`.
#[repr(C)]
#[derive(Default, Debug)]
pub(crate) struct ThreadStoreData {
    pub(crate) thread_count: i32,
    pub(crate) unstarted: i32,
    pub(crate) background: i32,
    pub(crate) pending: i32,
    pub(crate) dead: i32,
    pub(crate) first_thread: u64,
    pub(crate) finalizer_thread: u64,
    pub(crate) gc_thread: u64,
    pub(crate) host_config: u32,
}

/// `DacpThreadData`.
#[repr(C)]
#[derive(Default, Debug, Clone)]
pub(crate) struct ThreadData {
    pub(crate) cor_thread_id: u32,
    pub(crate) os_thread_id: u32,
    pub(crate) state: i32,
    pub(crate) preemptive_gc_disabled: u32,
    pub(crate) alloc_context_ptr: u64,
    pub(crate) alloc_context_limit: u64,
    pub(crate) context: u64,
    pub(crate) domain: u64,
    pub(crate) frame: u64,
    pub(crate) lock_count: u32,
    pub(crate) first_nested_exception: u64,
    pub(crate) teb: u64,
    pub(crate) fiber_data: u64,
    pub(crate) last_thrown_object_handle: u64,
    pub(crate) next_thread: u64,
}

/// `DacpSyncBlockData`.
#[repr(C)]
#[derive(Default, Debug, Clone)]
pub(crate) struct SyncBlockData {
    pub(crate) object: u64,
    pub(crate) free: i32,
    pub(crate) sync_block: u64,
    pub(crate) com_flags: u32,
    pub(crate) monitor_held: u32,
    pub(crate) recursion: u32,
    pub(crate) holding_thread: u64,
    pub(crate) additional_thread_count: u32,
    pub(crate) app_domain: u64,
    pub(crate) sync_block_count: u32,
}

/// `DacpObjectData`.
#[repr(C)]
#[derive(Default, Debug)]
pub(crate) struct ObjectData {
    pub(crate) method_table: u64,
    pub(crate) object_type: u32,
    pub(crate) size: u64,
    pub(crate) element_type_handle: u64,
    pub(crate) element_type: u32,
    pub(crate) rank: u32,
    pub(crate) num_components: u64,
    pub(crate) component_size: u64,
    pub(crate) array_data: u64,
    pub(crate) array_bounds: u64,
    pub(crate) array_lower_bounds: u64,
    pub(crate) rcw: u64,
    pub(crate) ccw: u64,
}

/// `DacpExceptionObjectData`.
#[repr(C)]
#[derive(Default, Debug)]
pub(crate) struct ExceptionData {
    pub(crate) message: u64,
    pub(crate) inner: u64,
    pub(crate) stack_trace: u64,
    pub(crate) watson_buckets: u64,
    pub(crate) stack_trace_string: u64,
    pub(crate) remote_stack_trace_string: u64,
    pub(crate) hresult: i32,
    pub(crate) xcode: i32,
}

/// `DacpMethodTableData`.
#[repr(C)]
#[derive(Default, Debug)]
pub(crate) struct MethodTableData {
    pub(crate) is_free: i32,
    pub(crate) module: u64,
    pub(crate) class: u64,
    pub(crate) parent: u64,
    pub(crate) num_interfaces: u16,
    pub(crate) num_methods: u16,
    pub(crate) num_vtable_slots: u16,
    pub(crate) num_virtuals: u16,
    pub(crate) base_size: u32,
    pub(crate) component_size: u32,
    pub(crate) token: u32,
    pub(crate) attr_class: u32,
    pub(crate) is_shared: i32,
    pub(crate) is_dynamic: i32,
    pub(crate) contains_pointers: i32,
}

/// `DacpGcHeapData`.
#[repr(C)]
#[derive(Default, Debug)]
pub(crate) struct GcHeapData {
    pub(crate) server_mode: i32,
    pub(crate) structures_valid: i32,
    pub(crate) heap_count: u32,
    pub(crate) max_generation: u32,
}

/// `DacpGenerationData`.
#[repr(C)]
#[derive(Default, Debug, Clone, Copy)]
pub(crate) struct GenerationData {
    pub(crate) start_segment: u64,
    pub(crate) allocation_start: u64,
    pub(crate) alloc_context_ptr: u64,
    pub(crate) alloc_context_limit: u64,
}

/// `DacpGcHeapDetails`.
#[repr(C)]
#[derive(Default, Debug, Clone)]
pub(crate) struct GcHeapDetails {
    pub(crate) heap_addr: u64,
    pub(crate) alloc_allocated: u64,
    pub(crate) mark_array: u64,
    pub(crate) c_gc_state: u64,
    pub(crate) next_sweep_obj: u64,
    pub(crate) saved_sweep_ephemeral_seg: u64,
    pub(crate) saved_sweep_ephemeral_start: u64,
    pub(crate) background_saved_lowest: u64,
    pub(crate) background_saved_highest: u64,
    pub(crate) generations: [GenerationData; 4],
    pub(crate) ephemeral_heap_segment: u64,
    pub(crate) finalization_fill_pointers: [u64; 7],
    pub(crate) lowest_address: u64,
    pub(crate) highest_address: u64,
    pub(crate) card_table: u64,
}

/// `DacpHeapSegmentData`.
#[repr(C)]
#[derive(Default, Debug, Clone)]
pub(crate) struct HeapSegmentData {
    pub(crate) segment_addr: u64,
    pub(crate) allocated: u64,
    pub(crate) committed: u64,
    pub(crate) reserved: u64,
    pub(crate) used: u64,
    pub(crate) mem: u64,
    pub(crate) next: u64,
    pub(crate) gc_heap: u64,
    pub(crate) high_alloc_mark: u64,
    pub(crate) flags: u64,
    pub(crate) background_allocated: u64,
}

/// `SOSStackRefData`.
#[repr(C)]
#[derive(Default, Debug, Clone, Copy)]
pub(crate) struct StackRefData {
    pub(crate) has_register_information: i32,
    pub(crate) register: i32,
    pub(crate) offset: i32,
    pub(crate) address: u64,
    pub(crate) object: u64,
    pub(crate) flags: u32,
    pub(crate) source_type: u32,
    pub(crate) source: u64,
    pub(crate) stack_pointer: u64,
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::mem::size_of;

    /// The sizes `dacprivate.h` asserts for the frozen records.
    #[test]
    fn records_have_the_runtimes_sizes() {
        assert_eq!(size_of::<ThreadStoreData>(), 0x38);
        assert_eq!(size_of::<ThreadData>(), 0x68);
        assert_eq!(size_of::<SyncBlockData>(), 0x48);
        assert_eq!(size_of::<ObjectData>(), 0x60);
        assert_eq!(size_of::<ExceptionData>(), 0x38);
        assert_eq!(size_of::<MethodTableData>(), 0x48);
        assert_eq!(size_of::<GcHeapData>(), 0x10);
        assert_eq!(size_of::<GcHeapDetails>(), 0x120);
        assert_eq!(size_of::<HeapSegmentData>(), 0x58);
        assert_eq!(size_of::<HandleData>(), 0x30);
    }
}

/// `SOSHandleData`.
#[repr(C)]
#[derive(Default, Debug, Clone, Copy)]
pub(crate) struct HandleData {
    pub(crate) app_domain: u64,
    pub(crate) handle: u64,
    pub(crate) secondary: u64,
    pub(crate) kind: u32,
    pub(crate) strong: i32,
    pub(crate) ref_count: u32,
    pub(crate) jupiter_ref_count: u32,
    pub(crate) pegged: i32,
}
