# head_copy[template_nt_inline]: series:6.12 build ae9df9ca7b81, as the guest ran it (benchmarks/kernel_cycles.py)
movq %rbx, %rdi
shlq $6, %rdi
addq 0x38bd3a(%rip), %rdi
movq %rdi, %r13
testl %r12d, %r12d
je 0xffffffff813884c8
cmpq %rbx, 0x10(%rsp)
je 0xffffffff813884d7
movl %r12d, %edx
movq %r15, %rsi
callq 0xffffffff8111c190
nopl (%rax, %rax)
cmpl $1, %edx
je 0xffffffff8111c1ea
cmpl $2, %edx
je 0xffffffff8111c229
movq (%rsi), %rax
movntiq %rax, (%rdi)
movq 8(%rsi), %rax
movntiq %rax, 8(%rdi)
movq 0x10(%rsi), %rax
movntiq %rax, 0x10(%rdi)
movq 0x18(%rsi), %rax
movntiq %rax, 0x18(%rdi)
movq 0x20(%rsi), %rax
movntiq %rax, 0x20(%rdi)
movq 0x28(%rsi), %rax
movntiq %rax, 0x28(%rdi)
movq 0x30(%rsi), %rax
movntiq %rax, 0x30(%rdi)
movq 0x38(%rsi), %rax
movntiq %rax, 0x38(%rdi)
retq
testl $0x7fff, %ebx
jne 0xffffffff813883d8
cmpl $1, 0x1c(%rsp)
je 0xffffffff8138846a
movq 0x20(%rsp), %rax
addq %rax, %rbx
movq 0x28(%rsp), %rax
cmpq %rax, %rbx
jae 0xffffffff81388534
