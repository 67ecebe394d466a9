/*
 * table.c: what the command table (table.h) defines itself: the flags every
 * command takes and the operands most take.
 */
#include "pipeline/command/table.h"

#include <stddef.h>

const sp_flag sp_common_flags[] = {
    {"config", 'c', "FILE", 0, NULL, NULL, SP_COMPLETE_INI, NULL},
    {"set", 0, "S.K=V", 0, NULL,
     "set one key (repeatable), e.g. --set sst.block_size=16K; precedence: defaults < -c FILE "
     "< --set < the flags above",
     SP_COMPLETE_KEY, NULL},
    {"help", 'h', NULL, 0, NULL, "show this help", SP_COMPLETE_NONE, NULL},
};
const size_t sp_n_common_flags = sizeof sp_common_flags / sizeof sp_common_flags[0];

const sp_operand sp_input_operand[1] = {{"INPUT", SP_COMPLETE_FILE, NULL}};
const sp_operand sp_file_operand[1] = {{"FILE", SP_COMPLETE_FILE, NULL}};

int sp_flag_key(const sp_flag *f) {
    return f->key - 1;
}
