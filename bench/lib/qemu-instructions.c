/* A QEMU TCG plugin that counts the guest instructions a program executes under qemu-user.
 *
 * Why: this machine has no hardware counters (`perf stat -e instructions` is "not supported")
 * and valgrind 3.19 dies when a Swift 6.3 binary starts its first dispatch thread, so the
 * instruction count that issue 15 asks for is taken under emulation instead. The count is
 * repeatable (h2load: the same total to within 12 instructions run to run) whatever else the
 * machine does.
 *
 * Debian ships qemu-user without qemu-plugin.h, so the few calls used are declared here
 * (QEMU 7.2, plugin API version 1). Built by bench/apns/instructions.sh:
 *   gcc -O2 -shared -fPIC -fvisibility=hidden qemu-instructions.c -o libinstructions.so
 *   qemu-x86_64 -plugin ./libinstructions.so -d plugin PROGRAM ARGS...
 * prints "instructions: N" when the program exits. */
#include <inttypes.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

typedef uint64_t qemu_plugin_id_t;
typedef struct qemu_info_t qemu_info_t;
struct qemu_plugin_tb;
enum qemu_plugin_cb_flags { QEMU_PLUGIN_CB_NO_REGS, QEMU_PLUGIN_CB_R_REGS, QEMU_PLUGIN_CB_RW_REGS };
typedef void (*qemu_plugin_vcpu_tb_trans_cb_t)(qemu_plugin_id_t id, struct qemu_plugin_tb *tb);
typedef void (*qemu_plugin_vcpu_udata_cb_t)(unsigned int vcpu_index, void *userdata);
typedef void (*qemu_plugin_udata_cb_t)(qemu_plugin_id_t id, void *userdata);
void qemu_plugin_register_vcpu_tb_trans_cb(qemu_plugin_id_t id, qemu_plugin_vcpu_tb_trans_cb_t cb);
void qemu_plugin_register_vcpu_tb_exec_cb(struct qemu_plugin_tb *tb, qemu_plugin_vcpu_udata_cb_t cb,
                                          enum qemu_plugin_cb_flags flags, void *userdata);
size_t qemu_plugin_tb_n_insns(const struct qemu_plugin_tb *tb);
void qemu_plugin_register_atexit_cb(qemu_plugin_id_t id, qemu_plugin_udata_cb_t cb, void *userdata);
void qemu_plugin_outs(const char *string);

__attribute__((visibility("default"))) int qemu_plugin_version = 1;

/* One counter for all threads, added to atomically: qemu-user runs the guest's threads in
 * parallel, and an inline (non-atomic) add would lose counts between them. */
static uint64_t executed;

static void block_executed(unsigned int vcpu_index, void *instructions) {
    __atomic_fetch_add(&executed, (uint64_t)(uintptr_t)instructions, __ATOMIC_RELAXED);
}

static void block_translated(qemu_plugin_id_t id, struct qemu_plugin_tb *tb) {
    qemu_plugin_register_vcpu_tb_exec_cb(tb, block_executed, QEMU_PLUGIN_CB_NO_REGS,
                                         (void *)(uintptr_t)qemu_plugin_tb_n_insns(tb));
}

static void program_exited(qemu_plugin_id_t id, void *unused) {
    char line[64];
    snprintf(line, sizeof line, "instructions: %" PRIu64 "\n", __atomic_load_n(&executed, __ATOMIC_RELAXED));
    qemu_plugin_outs(line);
}

__attribute__((visibility("default"))) int qemu_plugin_install(qemu_plugin_id_t id, const qemu_info_t *info, int argc, char **argv) {
    qemu_plugin_register_vcpu_tb_trans_cb(id, block_translated);
    qemu_plugin_register_atexit_cb(id, program_exited, NULL);
    return 0;
}
