# pageblock: series:6.12 build ae9df9ca7b81, as the guest ran it (benchmarks/kernel_cycles.py)
movq %r12, %rdi
movl $1, %esi
shlq $6, %rdi
addq 0x38bc55(%rip), %rdi
callq 0xffffffff811556e0
nopw (%rax)
nopl (%rax, %rax)
movl 0x7e56f1(%rip), %eax
testl %eax, %eax
je 0xffffffff811556fb
movq %rdi, %rdx
subq 0x5beac3(%rip), %rdx
movslq %esi, %rsi
sarq $6, %rdx
movl $7, %ecx
jmp 0xffffffff81153ae0
nopw (%rax)
nopl (%rax, %rax)
movq %rsi, %r8
movq %rcx, %rdi
movq %rdx, %rsi
movq %rdx, %rcx
shrq $0xf, %rcx
shrq $0x17, %rsi
nopl (%rax, %rax)
movl $0x20000, %eax
cmpq %rax, %rsi
jae 0xffffffff81153b73
movq 0x8f9f85(%rip), %rax
testq %rax, %rax
je 0xffffffff81153b2b
movq (%rax, %rsi, 8), %rax
testq %rax, %rax
je 0xffffffff81153b2b
movzbl %cl, %ecx
shlq $4, %rcx
addq %rcx, %rax
shrq $9, %rdx
movq 8(%rax), %rax
andl $0x3f, %edx
shll $2, %edx
movl %edx, %ecx
shrq $3, %rdx
andl $0x3f, %ecx
andl $0x18, %edx
leaq 0x18(%rax, %rdx), %rsi
shlq %cl, %rdi
shlq %cl, %r8
movq (%rsi), %rax
movq %rdi, %rcx
notq %rcx
movq %rax, %rdx
andq %rcx, %rdx
orq %r8, %rdx
cmpxchgq %rdx, (%rsi)
jne 0xffffffff81153b59
retq
testl $0x7fff, %r12d
jne 0xffffffff81388554
addq $0x200, %r12
cmpq %rbx, %r12
jae 0xffffffff81388525
