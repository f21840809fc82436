# tail_copy[template]: series:6.12 build ae9df9ca7b81, as the guest ran it (benchmarks/kernel_cycles.py)
movq %r15, %rdi
shlq $6, %rdi
addq 0x38c18a(%rip), %rdi
testl %ebx, %ebx
jne 0xffffffff81388005
cmpq %r15, 0x30(%rsp)
je 0xffffffff813880c7
movl %ebx, %edx
movq %r14, %rsi
callq 0xffffffff8111c190
nopl (%rax, %rax)
cmpl $1, %edx
je 0xffffffff8111c1ea
movq (%rsi), %rax
movq %rax, (%rdi)
movq 8(%rsi), %rax
movq %rax, 8(%rdi)
movq 0x10(%rsi), %rax
movq %rax, 0x10(%rdi)
movq 0x18(%rsi), %rax
movq %rax, 0x18(%rdi)
movq 0x20(%rsi), %rax
movq %rax, 0x20(%rdi)
movq 0x28(%rsi), %rax
movq %rax, 0x28(%rdi)
movq 0x30(%rsi), %rax
movq %rax, 0x30(%rdi)
movq 0x38(%rsi), %rax
movq %rax, 0x38(%rdi)
retq
movq 0x38(%rsp), %rax
addq $1, %r15
addl $1, %r13d
cmpq %rax, %r15
jae 0xffffffff813881af
