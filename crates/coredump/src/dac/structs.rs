//! The records the data access library fills (`Dacp*Data`), laid out as the runtime's
//! `dacprivate.h` declares them; the runtime keeps these layouts frozen.

#![allow(dead_code)] // Fields the library fills that clrspy does not read yet.

/// `DacpThreadStoreData`.
#[repr(C)]
#[derive(Default, Debug)]
pub(crate) struct ThreadStoreData {
    pub thread_count: i32,
    pub unstarted: i32,
    pub background: i32,
    pub pending: i32,
    pub dead: i32,
    pub first_thread: u64,
    pub finalizer_thread: u64,
    pub gc_thread: u64,
    pub host_config: u32,
}

/// `DacpThreadData`.
#[repr(C)]
#[derive(Default, Debug, Clone)]
pub(crate) struct ThreadData {
    pub cor_thread_id: u32,
    pub os_thread_id: u32,
    pub state: i32,
    pub preemptive_gc_disabled: u32,
    pub alloc_context_ptr: u64,
    pub alloc_context_limit: u64,
    pub context: u64,
    pub domain: u64,
    pub frame: u64,
    pub lock_count: u32,
    pub first_nested_exception: u64,
    pub teb: u64,
    pub fiber_data: u64,
    pub last_thrown_object_handle: u64,
    pub next_thread: u64,
}

/// `DacpSyncBlockData`.
#[repr(C)]
#[derive(Default, Debug, Clone)]
pub(crate) struct SyncBlockData {
    pub object: u64,
    pub free: i32,
    pub sync_block: u64,
    pub com_flags: u32,
    pub monitor_held: u32,
    pub recursion: u32,
    pub holding_thread: u64,
    pub additional_thread_count: u32,
    pub app_domain: u64,
    pub sync_block_count: u32,
}

/// `DacpObjectData`.
#[repr(C)]
#[derive(Default, Debug)]
pub(crate) struct ObjectData {
    pub method_table: u64,
    pub object_type: u32,
    pub size: u64,
    pub element_type_handle: u64,
    pub element_type: u32,
    pub rank: u32,
    pub num_components: u64,
    pub component_size: u64,
    pub array_data: u64,
    pub array_bounds: u64,
    pub array_lower_bounds: u64,
    pub rcw: u64,
    pub ccw: u64,
}

/// `DacpExceptionObjectData`.
#[repr(C)]
#[derive(Default, Debug)]
pub(crate) struct ExceptionData {
    pub message: u64,
    pub inner: u64,
    pub stack_trace: u64,
    pub watson_buckets: u64,
    pub stack_trace_string: u64,
    pub remote_stack_trace_string: u64,
    pub hresult: i32,
    pub xcode: i32,
}

/// `DacpMethodTableData`.
#[repr(C)]
#[derive(Default, Debug)]
pub(crate) struct MethodTableData {
    pub is_free: i32,
    pub module: u64,
    pub class: u64,
    pub parent: u64,
    pub num_interfaces: u16,
    pub num_methods: u16,
    pub num_vtable_slots: u16,
    pub num_virtuals: u16,
    pub base_size: u32,
    pub component_size: u32,
    pub token: u32,
    pub attr_class: u32,
    pub is_shared: i32,
    pub is_dynamic: i32,
    pub contains_pointers: i32,
}

/// `DacpGcHeapData`.
#[repr(C)]
#[derive(Default, Debug)]
pub(crate) struct GcHeapData {
    pub server_mode: i32,
    pub structures_valid: i32,
    pub heap_count: u32,
    pub max_generation: u32,
}

/// `DacpGenerationData`.
#[repr(C)]
#[derive(Default, Debug, Clone, Copy)]
pub(crate) struct GenerationData {
    pub start_segment: u64,
    pub allocation_start: u64,
    pub alloc_context_ptr: u64,
    pub alloc_context_limit: u64,
}

/// `DacpGcHeapDetails`.
#[repr(C)]
#[derive(Default, Debug, Clone)]
pub(crate) struct GcHeapDetails {
    pub heap_addr: u64,
    pub alloc_allocated: u64,
    pub mark_array: u64,
    pub c_gc_state: u64,
    pub next_sweep_obj: u64,
    pub saved_sweep_ephemeral_seg: u64,
    pub saved_sweep_ephemeral_start: u64,
    pub background_saved_lowest: u64,
    pub background_saved_highest: u64,
    pub generations: [GenerationData; 4],
    pub ephemeral_heap_segment: u64,
    pub finalization_fill_pointers: [u64; 7],
    pub lowest_address: u64,
    pub highest_address: u64,
    pub card_table: u64,
}

/// `DacpHeapSegmentData`.
#[repr(C)]
#[derive(Default, Debug, Clone)]
pub(crate) struct HeapSegmentData {
    pub segment_addr: u64,
    pub allocated: u64,
    pub committed: u64,
    pub reserved: u64,
    pub used: u64,
    pub mem: u64,
    pub next: u64,
    pub gc_heap: u64,
    pub high_alloc_mark: u64,
    pub flags: u64,
    pub background_allocated: u64,
}

/// `SOSStackRefData`.
#[repr(C)]
#[derive(Default, Debug, Clone, Copy)]
pub(crate) struct StackRefData {
    pub has_register_information: i32,
    pub register: i32,
    pub offset: i32,
    pub address: u64,
    pub object: u64,
    pub flags: u32,
    pub source_type: u32,
    pub source: u64,
    pub stack_pointer: u64,
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
    }
}
